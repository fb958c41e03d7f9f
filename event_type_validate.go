package webhooks

// Event data held to its type's JSON Schema (santhosh-tekuri/jsonschema v6): compiled once per schema
// version per process, with no loader but one that refuses every document the schema does not embed.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiledSchema is an event type's schema, ready to validate data.
type compiledSchema struct {
	s *jsonschema.Schema
}

// errRemoteRef is the loader's answer to every document a schema names but does not hold.
var errRemoteRef = errors.New("a schema may not refer to another document (only $ref within it, and the standard drafts' meta-schemas)")

// refusingLoader loads no document: a $ref or $schema naming a document that is not the schema itself
// (nor a draft's meta-schema, which the validator embeds) fails the compile. No file or URL is read.
type refusingLoader struct{}

// Load refuses url.
func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: %w", url, errRemoteRef)
}

// schemaPrinter renders the validator's messages.
var schemaPrinter = message.NewPrinter(language.English)

// compileSchema compiles an event type's schema: JSON Schema 2020-12 unless its $schema names another
// draft the validator knows (Draft 7 among them), formats asserted, no other document loaded.
func compileSchema(name string, raw []byte) (*compiledSchema, error) {
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
	return &compiledSchema{s: s}, nil
}

// validate checks data (JSON) against the schema; a failure names the first failing instance path
// and keyword.
func (c *compiledSchema) validate(data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("data is not JSON: %w", err)
	}
	err = c.s.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	path := "/" + strings.Join(escapePointer(leaf.InstanceLocation), "/")
	keyword := strings.Join(escapePointer(leaf.ErrorKind.KeywordPath()), "/")
	return &schemaError{path: path, keyword: keyword, message: leaf.ErrorKind.LocalizedString(schemaPrinter)}
}

// schemaError is data failing its schema: where, by which keyword, and why.
type schemaError struct {
	path, keyword, message string
}

func (e *schemaError) Error() string {
	return fmt.Sprintf("at %s: keyword %s: %s", e.path, e.keyword, e.message)
}

// escapePointer escapes JSON pointer tokens (RFC 6901).
func escapePointer(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return out
}

// eventData is the data of a request body as encode writes it ({"id","type","timestamp","data"}, in
// that order): the bytes after the first `,"data":`, which the id and type (JSON strings, their
// quotes escaped) and the timestamp cannot hold, up to the closing brace.
func eventData(body []byte) []byte {
	const marker = `,"data":`
	i := bytes.Index(body, []byte(marker))
	if i < 0 || len(body) < i+len(marker)+1 {
		return nil
	}
	return body[i+len(marker) : len(body)-1]
}
