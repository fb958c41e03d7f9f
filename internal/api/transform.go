package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/smartdrop/webhooks/internal/types"
)

// TransformPreview is the body of POST /transform/preview: an expression and the event to run it on,
// or a catalog type whose first example is the event's data.
type TransformPreview struct {
	Transform string `json:"transform"`
	Event     *struct {
		ID     string          `json:"id"`
		Type   string          `json:"type"`
		Tenant string          `json:"tenant"`
		Data   json.RawMessage `json:"data"`
	} `json:"event"`
	EventType string `json:"event_type"`
}

// TransformPreviewAnswer is what an expression makes of the sample event.
type TransformPreviewAnswer struct {
	Data    json.RawMessage `json:"data"`
	Skipped bool            `json:"skipped"`
}

// previewTransform runs a transformation on a sample event (its own, or a catalog type's first
// example) and answers what a webhook with it would receive; in the portal the event is the tenant's.
func (rt *router) previewTransform(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, false)
	var req TransformPreview
	if err == nil && json.Unmarshal(body, &req) != nil {
		err = fmt.Errorf("%w: the body must be a JSON object {\"transform\", \"event\" or \"event_type\"}", ErrBadRequest)
	}
	if err == nil && (req.Event == nil) == (req.EventType == "") {
		err = fmt.Errorf("%w: give either event (id, type, data) or event_type (a catalog type: its first example is the data)", ErrBadRequest)
	}
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	s := scopeOf(r)
	evt := types.Event{ID: "evt_preview", Type: req.EventType}
	if req.Event != nil {
		evt = types.Event{ID: req.Event.ID, Type: req.Event.Type, Tenant: req.Event.Tenant, Data: req.Event.Data}
		if evt.ID == "" {
			evt.ID = "evt_preview"
		}
	} else {
		t, err := rt.b.GetEventType(r.Context(), req.EventType)
		if err != nil {
			rt.fail(w, r, err)
			return
		}
		if len(t.Examples) == 0 {
			rt.fail(w, r, fmt.Errorf("%w: event type %s has no example: give an event instead", ErrBadRequest, t.Name))
			return
		}
		evt.Data = t.Examples[0]
	}
	if s.Restricted {
		evt.Tenant = s.Tenant // a tenant previews its own events
	}
	data, err := rt.b.PreviewTransform(r.Context(), req.Transform, evt)
	if err != nil {
		rt.fail(w, r, err)
		return
	}
	rt.answer(w, r, http.StatusOK, TransformPreviewAnswer{Data: data, Skipped: string(data) == "null"}, nil)
}
