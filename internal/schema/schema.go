// Package schema holds event data to JSON Schemas (santhosh-tekuri/jsonschema v6): a schema is
// compiled once, loading no document it does not embed, and validates data with an error that names
// the failing instance path and keyword.
package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// ErrRemoteRef is the error (wrapped) of a schema that names a document it does not hold.
var ErrRemoteRef = errors.New("a schema may not refer to another document (only $ref within it, and the standard drafts' meta-schemas)")

// refusingLoader loads no document: a $ref or $schema naming a document that is not the schema itself
// (nor a draft's meta-schema, which the validator embeds) fails the compile. No file or URL is read.
type refusingLoader struct{}

// Load refuses url.
func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: %w", url, ErrRemoteRef)
}

// printer renders the validator's messages.
var printer = message.NewPrinter(language.English)

// Compile compiles raw, a JSON Schema named name: 2020-12 unless its $schema names another draft the
// validator knows (Draft 7 among them), formats asserted, no other document loaded.
func Compile(name string, raw []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	url := "urn:webhooks:event-type:" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema does not compile: %w", err)
	}
	return &Schema{s: s}, nil
}

// Validate checks data (JSON) against the schema. A failure is a *Error naming the first failing
// instance path and keyword.
func (s *Schema) Validate(data []byte) error {
	inst, err := decodeData(data)
	if err != nil {
		if inst, err = jsonschema.UnmarshalJSON(bytes.NewReader(data)); err != nil {
			return fmt.Errorf("data is not JSON: %w", err)
		}
	}
	err = s.s.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	return &Error{
		Path:    "/" + strings.Join(escapePointer(leaf.InstanceLocation), "/"),
		Keyword: strings.Join(escapePointer(leaf.ErrorKind.KeywordPath()), "/"),
		Message: leaf.ErrorKind.LocalizedString(printer),
	}
}

// Error is data failing its schema: where (a JSON pointer into the data), by which keyword, and why.
type Error struct {
	Path, Keyword, Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("at %s: keyword %s: %s", e.Path, e.Keyword, e.Message)
}

// escapePointer escapes JSON pointer tokens (RFC 6901).
func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return out
}
