package webhooks

// Event data held to its type's JSON Schema (internal/schema), compiled once per version of the type
// per process (event_type_cache.go).

import "bytes"

// eventData is the data of a request body as encode writes it ({"id","type","timestamp","data"}, in
// that order): the bytes after the first `,"data":`, which the id and type (JSON strings, their
// quotes escaped) and the timestamp cannot hold, up to the closing brace.
func eventData(body []byte) []byte {
	const marker = `,"data":`
	i := bytes.Index(body, []byte(marker))
	if i < 0 || len(body) < i+len(marker)+1 {
		return nil
	}
	return body[i+len(marker) : len(body)-1]
}
