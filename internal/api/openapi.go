package api

// The OpenAPI 3.1 document of the API (openapi.json), served at GET /openapi.json by the operator's
// API and, without a token, by the portal. The document holds no data; the portal's copy omits the
// operations of the routes it does not serve (operatorOnly in the route table).

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
)

// openAPIPattern is the route of the OpenAPI document.
const openAPIPattern = "GET /openapi.json"

//go:embed openapi.json
var openAPIDocument []byte

// openAPIFor is the document a router serves: the whole document, or for the portal the document
// without the operations of operator-only routes.
func openAPIFor(portal bool) []byte {
	if !portal {
		return openAPIDocument
	}
	var doc struct {
		Rest  map[string]json.RawMessage
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(openAPIDocument, &doc.Rest); err != nil {
		panic("webhooks: embedded openapi.json is not JSON: " + err.Error()) // a test reads it
	}
	if err := json.Unmarshal(doc.Rest["paths"], &doc.Paths); err != nil {
		panic("webhooks: embedded openapi.json has no paths object: " + err.Error())
	}
	for _, r := range routes {
		if !r.operatorOnly {
			continue
		}
		method, path, _ := strings.Cut(r.pattern, " ")
		item := doc.Paths[path]
		delete(item, strings.ToLower(method))
		if len(item) == 0 || (len(item) == 1 && item["parameters"] != nil) {
			delete(doc.Paths, path)
		}
	}
	doc.Rest["paths"], _ = json.Marshal(doc.Paths) // decoded JSON always encodes
	out, _ := json.Marshal(doc.Rest)
	return out
}

func (rt *router) openAPI(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, rt.spec)
}
