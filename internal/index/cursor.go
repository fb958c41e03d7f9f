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
	// cursorVersion is the first byte of every cursor.
	cursorVersion = 2
)

// cursor is the opaque cursor of a listing that continues after p.
func (p Pos) cursor() string {
	b := make([]byte, 0, 17+len(p.ID))
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.MS))
	b = binary.BigEndian.AppendUint64(b, uint64(p.Seq))
	b = append(b, p.ID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor made by Pos.cursor.
func decodeCursor(c string) (Pos, error) {
	if len(c) > base64.RawURLEncoding.EncodedLen(17+maxCursorID) {
		return Pos{}, fmt.Errorf("%w: too long", types.ErrInvalidCursor)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil {
		return Pos{}, fmt.Errorf("%w: %w", types.ErrInvalidCursor, err)
	}
	if len(b) < 17 || b[0] != cursorVersion { // an empty id marks the place of an entry of another shape
		return Pos{}, fmt.Errorf("%w: unknown format", types.ErrInvalidCursor)
	}
	p := Pos{MS: int64(binary.BigEndian.Uint64(b[1:9])), Seq: int64(binary.BigEndian.Uint64(b[9:17])), ID: string(b[17:])}
	if p.MS < 0 || p.Seq < 0 || !utf8.ValidString(p.ID) {
		return Pos{}, fmt.Errorf("%w: unknown format", types.ErrInvalidCursor)
	}
	if p.cursor() != c { // the decoder skips line breaks: accept only the one spelling we issue
		return Pos{}, fmt.Errorf("%w: not canonical", types.ErrInvalidCursor)
	}
	return p, nil
}
