package eventtypes

// The event data a type's schema (Entry.Validator) is held to.

import "bytes"

// Data is the data of a request body as the root's encode writes it ({"id","type","timestamp","data"},
// in that order): the bytes after the first `,"data":`, which the id and type (JSON strings, their
// quotes escaped) and the timestamp cannot hold, up to the closing brace.
func Data(body []byte) []byte {
	const marker = `,"data":`
	i := bytes.Index(body, []byte(marker))
	if i < 0 || len(body) < i+len(marker)+1 {
		return nil
	}
	return body[i+len(marker) : len(body)-1]
}
