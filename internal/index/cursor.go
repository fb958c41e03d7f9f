package index

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/smartdrop/webhooks/internal/types"
)

// The cursor's format.
const (
	// maxCursorID bounds the id inside a cursor.
	maxCursorID = 256
	// cursorVersion is the first byte of a cursor of the webhooks' own indexes (Keys.Index: a
	// webhook's page, the operator's search); tenantCursorVersion of a tenant's index (Keys.TenantIndex:
	// a portal's search). A delivery has another place in each, so a cursor of one is refused by the
	// other.
	cursorVersion, tenantCursorVersion = 2, 3
)

// cursor is the opaque cursor of a listing of the webhooks' own indexes that continues after p.
func (p Pos) cursor() string { return p.cursorAs(cursorVersion) }

// cursorAs is the cursor of version v (cursorVersion, tenantCursorVersion) that continues after p.
func (p Pos) cursorAs(v byte) string {
	b := make([]byte, 0, 17+len(p.ID))
	b = append(b, v)
	b = binary.BigEndian.AppendUint64(b, uint64(p.MS))
	b = binary.BigEndian.AppendUint64(b, uint64(p.Seq))
	b = append(b, p.ID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor made by Pos.cursor.
func decodeCursor(c string) (Pos, error) { return decodeCursorAs(c, cursorVersion) }

// decodeCursorAs reads a cursor of version v made by Pos.cursorAs; one of another version is refused.
func decodeCursorAs(c string, v byte) (Pos, error) {
	if len(c) > base64.RawURLEncoding.EncodedLen(17+maxCursorID) {
		return Pos{}, fmt.Errorf("%w: too long", types.ErrInvalidCursor)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil {
		return Pos{}, fmt.Errorf("%w: %w", types.ErrInvalidCursor, err)
	}
	if len(b) < 17 || b[0] != v { // an empty id marks the place of an entry of another shape
		return Pos{}, fmt.Errorf("%w: unknown format", types.ErrInvalidCursor)
	}
	p := Pos{MS: int64(binary.BigEndian.Uint64(b[1:9])), Seq: int64(binary.BigEndian.Uint64(b[9:17])), ID: string(b[17:])}
	if p.MS < 0 || p.Seq < 0 || !utf8.ValidString(p.ID) {
		return Pos{}, fmt.Errorf("%w: unknown format", types.ErrInvalidCursor)
	}
	if p.MS == 0 && p.Seq == 0 { // no entry is at or before stream id 0-0: no listing issues it
		return Pos{}, fmt.Errorf("%w: it names stream position 0-0, where no listing stops; start again without a cursor", types.ErrInvalidCursor)
	}
	if p.cursorAs(v) != c { // the decoder skips line breaks: accept only the one spelling we issue
		return Pos{}, fmt.Errorf("%w: not canonical", types.ErrInvalidCursor)
	}
	return p, nil
}
