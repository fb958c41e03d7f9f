package sealed

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k1, k2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	r1, err := NewRing([][]byte{k1})
	require.NoError(t, err)
	sealed, err := r1.Seal("whsec_secret", "wh_1/secret")
	require.NoError(t, err)
	assert.True(t, IsSealed(sealed))
	assert.NotContains(t, sealed, "whsec_secret")
	assert.True(t, strings.HasPrefix(sealed, prefix+KeyID(k1)+":"))

	got, err := r1.Open(sealed, "wh_1/secret")
	require.NoError(t, err)
	assert.Equal(t, "whsec_secret", got)

	_, err = r1.Open(sealed, "wh_2/secret")
	assert.ErrorIs(t, err, ErrKey, "bound to its record and field")

	r2, err := NewRing([][]byte{k2})
	require.NoError(t, err)
	_, err = r2.Open(sealed, "wh_1/secret")
	assert.ErrorIs(t, err, ErrKey)
	assert.ErrorContains(t, err, KeyID(k1))
	_, err = (*Ring)(nil).Open(sealed, "wh_1/secret")
	assert.ErrorIs(t, err, ErrKey)

	rot, err := NewRing([][]byte{k2, k1})
	require.NoError(t, err)
	got, err = rot.Open(sealed, "wh_1/secret")
	require.NoError(t, err)
	assert.Equal(t, "whsec_secret", got)
	assert.False(t, rot.Current(sealed))
	assert.True(t, r1.Current(sealed))
	assert.False(t, rot.Current("clear"))

	clear, err := r1.Open("clear", "x")
	require.NoError(t, err)
	assert.Equal(t, "clear", clear)

	tampered := sealed[:len(sealed)-2] + "AA"
	if tampered == sealed {
		tampered = sealed[:len(sealed)-2] + "BB"
	}
	_, err = r1.Open(tampered, "wh_1/secret")
	assert.ErrorIs(t, err, ErrKey)

	_, err = NewRing([][]byte{k1[:16]})
	assert.Error(t, err)
}
