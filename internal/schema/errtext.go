package schema

// The words of a validation failure: where, by which keyword, and why, each clipped, so that an
// error quotes at most MaxValueBytes of any value of the data and is short whatever the data or the
// schema (a 200 KB string that fails its pattern does not come back whole).

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/smartdrop/webhooks/internal/types"
)

// Bounds of an error's parts: a JSON pointer into the data or the schema, and the reason.
const (
	maxPathBytes   = 3 * MaxValueBytes
	maxReasonBytes = 3 * MaxValueBytes
	// maxNamesListed bounds the member names an additionalProperties failure lists.
	maxNamesListed = 3
)

// Error is data failing its schema: where (a JSON pointer into the data), by which keyword (its path
// in the schema), and why. Each is clipped: at most MaxValueBytes of any value of the data, and at
// most maxPathBytes or maxReasonBytes in all.
type Error struct {
	Path, Keyword, Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("at %s: keyword %s: %s", e.Path, e.Keyword, e.Message)
}

// failure is the words of the first leaf of a validation error; formats maps the hooks' format
// names back to the schema's own.
func failure(ve *jsonschema.ValidationError, formats map[string]string) *Error {
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	path := make([]string, len(leaf.InstanceLocation))
	for i, tok := range leaf.InstanceLocation {
		path[i] = clip(escapeToken(tok), MaxValueBytes)
	}
	return &Error{
		Path:    clipFront("/"+strings.Join(path, "/"), maxPathBytes),
		Keyword: clipFront(strings.Join(escapePointer(leaf.ErrorKind.KeywordPath()), "/"), maxPathBytes),
		Message: clip(clippedKind(leaf.ErrorKind, formats).LocalizedString(printer), maxReasonBytes),
	}
}

// compileError is a schema the JSON Schema compiler refused, in words: where in the schema and why
// (the first leaf of the metaschema's failure, clipped as failure clips it), not the library's tree
// of allOf and anyOf failures.
func compileError(err error) error {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		f := failure(ve, nil)
		return fmt.Errorf("schema is not a valid JSON Schema (draft 2020-12): at %s: %s", f.Path, f.Message)
	}
	return fmt.Errorf("schema does not compile: %w", err)
}

// clippedKind is k with the values it quotes clipped to MaxValueBytes (those of the data, and the
// schema's const and enum).
func clippedKind(k jsonschema.ErrorKind, formats map[string]string) jsonschema.ErrorKind {
	switch k := k.(type) {
	case *kind.Pattern:
		c := *k
		c.Got = clip(k.Got, MaxValueBytes)
		return &c
	case *kind.Format:
		c := *k
		c.Got = clipAny(k.Got)
		if name, ok := formats[k.Want]; ok {
			c.Want = name
		}
		c.Err = clipErr(k.Err)
		return &c
	case *kind.PropertyNames:
		c := *k
		c.Property = clip(k.Property, MaxValueBytes)
		return &c
	case *kind.AdditionalProperties:
		c := *k
		c.Properties = make([]string, 0, maxNamesListed+1)
		for i, name := range k.Properties {
			if i == maxNamesListed {
				c.Properties = append(c.Properties, fmt.Sprintf("and %d more", len(k.Properties)-i))
				break
			}
			c.Properties = append(c.Properties, clip(name, MaxValueBytes))
		}
		return &c
	case *kind.Enum: // the schema's values, clipped as well
		c := *k
		c.Want = make([]any, len(k.Want))
		for i, w := range k.Want {
			c.Want[i] = clipAny(w)
		}
		return &c
	case *kind.Const:
		c := *k
		c.Want = clipAny(k.Want)
		return &c
	case *kind.ContentEncoding:
		c := *k
		c.Err = clipErr(k.Err)
		return &c
	case *kind.ContentMediaType:
		c := *k
		c.Got, c.Err = nil, clipErr(k.Err)
		return &c
	}
	return k
}

// clipErr is err's text clipped to MaxValueBytes (it may quote the value).
func clipErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(clip(err.Error(), MaxValueBytes))
}

// clipAny is v clipped to MaxValueBytes when it is a string.
func clipAny(v any) any {
	if s, ok := v.(string); ok {
		return clip(s, MaxValueBytes)
	}
	return v
}

// clip and clipFront cut a text quoted in an error (types.Clip, types.ClipFront).
var clip, clipFront = types.Clip, types.ClipFront

// escapePointer escapes JSON pointer tokens (RFC 6901).
func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = escapeToken(t)
	}
	return out
}
