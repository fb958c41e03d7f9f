package types

import "unicode/utf8"

// Clip is s cut to at most n bytes on a character boundary, "…" marking the cut: a text quoted in an
// error or stored with one (a value of the data, an error kept in a table).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ClipFront is s cut to its last n bytes at most, on a character boundary, "…" marking the cut: the
// end of a path names the place.
func ClipFront(s string, n int) string {
	if len(s) <= n {
		return s
	}
	from := len(s) - n + len("…")
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return "…" + s[from:]
}
