package webhooks

// fieldError is a validation error about one field of a webhook, named as in its JSON: the admin API
// answers it with that name in the error's "field" member, so a form can show it beside the field.
type fieldError struct {
	field string
	err   error
}

// inField marks err (nil stays nil) as about the webhook's JSON field name.
func inField(name string, err error) error {
	if err == nil {
		return nil
	}
	return &fieldError{field: name, err: err}
}

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// Field is the JSON name of the field the error is about.
func (e *fieldError) Field() string { return e.field }
