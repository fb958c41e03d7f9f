package index

import "testing"

// FuzzDecodeCursor: no input makes the cursor decoder panic, and what it accepts encodes back to itself.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(Pos{MS: 1.7e12, Seq: 3, ID: "dlv_0a0123456789abcdef01234567"}.cursor())
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, c string) {
		p, err := decodeCursor(c)
		if err != nil {
			return
		}
		if got := p.cursor(); got != c {
			t.Fatalf("cursor %q decodes to %+v which encodes to %q", c, p, got)
		}
		if _, _, ok := ParseStreamID(p.streamID()); !ok {
			t.Fatalf("cursor %q gives stream id %q", c, p.streamID())
		}
	})
}
