package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of webhooksd's own routes (ingest, portal tokens, health,
// readiness); the admin API's is the library's, at GET /openapi.json. Tests check real answers
// against it.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
