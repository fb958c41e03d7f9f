package rdb

import (
	"crypto/rand"
	"encoding/hex"
)

// NewToken is a new lease, probe or slot token: TokenLen/2 random bytes, TokenLen hex digits, the
// condition a conditional write carries.
func NewToken() string {
	b := make([]byte, TokenLen/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
