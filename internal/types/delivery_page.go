package types

// DeliveryQuery selects a page of one webhook's deliveries.
type DeliveryQuery struct {
	// Status keeps only deliveries in that state; "" keeps all.
	Status Status
	// Limit is the most deliveries a page holds: 0 means DefaultPageLimit, more than MaxPageLimit means
	// MaxPageLimit.
	Limit int
	// Cursor continues a listing where the page that returned it as NextCursor ended; "" starts at the
	// newest delivery.
	Cursor string
}

// DeliveryPage is one page of a webhook's deliveries, newest first. NextCursor is "" on the last page.
type DeliveryPage struct {
	Deliveries []*Delivery `json:"deliveries"`
	NextCursor string      `json:"next_cursor,omitempty"`
}
