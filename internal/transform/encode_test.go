package transform

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"cel.dev/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendJSONAsEncodingJSON: a result is encoded byte for byte as encoding/json encodes the Go
// value it stands for: keys in order, HTML-safe and control-character escapes, floats' forms.
func TestAppendJSONAsEncodingJSON(t *testing.T) {
	t.Parallel()
	p := compile(t, `{"z": [1, 2.5, 1e-7, 1e21, 123456789.0, -0.0, "a<b>&c\u2028\u0007\b\f\n\t\"\\", true, null, b"\x00\xff"],`+
		` "a": {"é": duration("1.5s"), "m": {}, "l": []}, "t": timestamp("2026-12-06T10:00:00.5Z"), "u": 7u}`)
	o, err := p.Apply(context.Background(), event)
	require.NoError(t, err)
	want, err := json.Marshal(map[string]any{
		"z": []any{int64(1), 2.5, 1e-7, 1e21, 123456789.0, math.Copysign(0, -1), "a<b>&c\u2028\u0007\b\f\n\t\"\\", true, nil, []byte{0, 0xff}},
		"a": map[string]any{"é": "1.5s", "m": map[string]any{}, "l": []any{}},
		"t": "2026-12-06T10:00:00.5Z", "u": uint64(7),
	})
	require.NoError(t, err)
	assert.Equal(t, string(want), string(o.Data))
}

// FuzzAppendJSON: any string and any finite float are encoded as encoding/json encodes them.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b>&c", "\u2028\u2029", "\x00\x1f\x7f", "\xff\xfe", "é✓😀", `"\`} {
		f.Add(s, 1.5)
	}
	f.Add("", 1e-7)
	f.Add("", 1e21)
	f.Add("", -0.000001)
	f.Add("", 5e-324)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		got, err := appendJSON(nil, types.String(s), 0)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%q", s)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			_, err := appendJSON(nil, types.Double(x), 0)
			require.Error(t, err)
			return
		}
		want, err = json.Marshal(x)
		require.NoError(t, err)
		got, err = appendJSON(nil, types.Double(x), 0)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%v", x)
	})
}

// FuzzReshape: a body, whatever its id, type, timestamp and data (as written between the quotes
// and after the key, unescaped), reshapes byte for byte as the body read whole by encoding/json does:
// the fast path keeps only a head encoding/json would write the same.
func FuzzReshape(f *testing.F) {
	const ts = "2026-12-06T10:00:00.5Z"
	for _, c := range decodeCases {
		f.Add("evt_1", "a.b", ts, []byte(c))
	}
	for _, head := range [][3]string{
		{"", "a.b", ts}, {`e\"1`, "a.b", ts}, {"e1", "a<b", ts}, {"e1", "a&b", ts}, {"e1", `a\u003cb`, ts}, {"e1", "a\u2028", ts}, {"e1", `a\u2028`, ts},
		{"e1", "a.b", "2026-12-06T10:00:00.500+00:00"}, {"e1", "a.b", "2026-12-06T11:00:00.5+01:00"},
		{"e1", "a.b", "2026-12-06T10:00:00.50Z"}, {`e\u00e9`, `\ud83d\ude00`, ts},
	} {
		f.Add(head[0], head[1], head[2], []byte(`{"n":1}`))
	}
	f.Add("e1", "a.b", ts, []byte(`{"n":1},"x":{"n":2}`))
	p := compile(f, `{"d": event.data, "id": event.id, "type": event.type, "time": event.time}`)
	f.Fuzz(func(t *testing.T, id, typ, ts string, data []byte) {
		raw := []byte(`{"id":"` + id + `","type":"` + typ + `","timestamp":"` + ts + `","data":` + string(data) + `}`)
		got, skip, err := p.Reshape(context.Background(), "acme", raw)
		var b body
		if werr := json.Unmarshal(raw, &b); werr != nil {
			require.Error(t, err, "%q", raw)
			return
		}
		var data0 any
		var werr error
		if len(b.Data) > 0 {
			data0, werr = decodeData(b.Data)
		}
		if werr != nil {
			require.Error(t, err, "%q", raw)
			return
		}
		o, werr := p.eval(context.Background(), Input{ID: b.ID, Type: b.Type, Tenant: "acme", Time: b.Timestamp}, timeText(b.Timestamp), data0)
		if werr != nil {
			require.Error(t, err, "%q", raw)
			return
		}
		require.NoError(t, err, "%q", raw)
		require.False(t, skip)
		want, werr := json.Marshal(body{ID: b.ID, Type: b.Type, Timestamp: b.Timestamp, Data: o.Data})
		require.NoError(t, werr)
		require.Equal(t, string(want), string(got), "%q", raw)
	})
}
