package api

import (
	"mime"
	"net/http"
)

// The guard of every route against requests a web page can forge. The admin UI authenticates the
// operator with whatever the embedding service puts in front of Handler (a session cookie, basic auth),
// credentials a browser attaches to a cross-site form as well; so the API refuses what such a form can
// send:
//
//   - an unsafe request (POST, PATCH, DELETE) from another origin, as the browser reports it in
//     Sec-Fetch-Site, or, from a browser that sends none, in an Origin header naming another host
//     (http.CrossOriginProtection); requests with neither header (curl, a service) are not a browser's
//     and pass;
//   - a body that is not declared JSON: a form can send text/plain, multipart or urlencoded bodies
//     without a preflight, never application/json.

// crossOrigin is the guard's cross-origin check, shared by every router.
var crossOrigin = http.NewCrossOriginProtection()

// guard reports whether r may be served; if not, it has answered it.
func guard(w http.ResponseWriter, r *http.Request) bool {
	if err := crossOrigin.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "cross_origin", "cross-origin requests that change data are refused")
		return false
	}
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody && !isJSON(r.Header.Get("Content-Type")) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "the request body must be application/json")
			return false
		}
	}
	return true
}

// isJSON reports whether a Content-Type names JSON (application/json, with any parameters).
func isJSON(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == "application/json"
}
