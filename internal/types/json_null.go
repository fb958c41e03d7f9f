package types

import (
	"bytes"
	"encoding/json"
)

// IsJSONNull reports whether raw is the JSON null (surrounding white space allowed).
func IsJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
