package herdrschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// SchemaEnv names the environment variable that overrides where the herdr
// schema is read from.
const SchemaEnv = "FLEET_HERDR_SCHEMA"

// RequireEnv names the environment variable that turns a missing schema
// from a skipped test into a failed one. A clone of the repository alone
// has no ../shared, so its tests that validate herdr's wire skip; CI
// (.ci/run) has shared/ beside the clone and sets it, so validation can
// never quietly stop there.
const RequireEnv = "FLEET_REQUIRE_HERDR_SCHEMA"

// schemaRel is where the schema sits relative to a directory above the
// repository: the repo is cloned at X/main (or X/ci-check) with X/shared
// beside it. The schema is herdr's, so it is read in place, never copied.
var schemaRel = filepath.Join("shared", "herdr", "herdr-api.schema.json")

// Validator checks lines against herdr's published JSON schema (protocol 20):
// requests, success and error responses, and both event line formats.
type Validator struct {
	request, success, failure, event, subEvent *jsonschema.Schema
}

// SchemaPath finds herdr-api.schema.json: $FLEET_HERDR_SCHEMA if set,
// otherwise shared/herdr/herdr-api.schema.json in the nearest directory at
// or above the working directory that has one.
func SchemaPath() (string, error) {
	if p := os.Getenv(SchemaEnv); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, schemaRel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("herdr schema: no %s above the working directory; set %s", schemaRel, SchemaEnv)
		}
		dir = parent
	}
}

// LoadSchema compiles the five top-level schemas of the herdr schema
// document at path. Each is compiled by JSON pointer inside the whole
// document, because their $refs ("#/schemas/request/$defs/…") are relative
// to the document root.
func LoadSchema(path string) (*Validator, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("herdr schema: %w", err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("herdr schema %s: %w", abs, err)
	}
	loc := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	c := jsonschema.NewCompiler()
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("herdr schema %s: %w", abs, err)
	}
	v := &Validator{}
	for ptr, dst := range map[string]**jsonschema.Schema{
		"request": &v.request, "success_response": &v.success, "error_response": &v.failure,
		"event": &v.event, "subscription_event": &v.subEvent,
	} {
		if *dst, err = c.Compile(loc + "#/schemas/" + ptr); err != nil {
			return nil, fmt.Errorf("herdr schema %s: compile %s: %w", abs, ptr, err)
		}
	}
	return v, nil
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*Validator{}
)

// Schema returns the Validator for herdr's schema, compiled once per test
// binary. When the schema cannot be found it skips the test, saying why
// and how to run it — or fails it when $FLEET_REQUIRE_HERDR_SCHEMA is set
// (CI): validation is the point of the fake, so a test that needs it never
// runs without it.
func Schema(tb testing.TB) *Validator {
	tb.Helper()
	path, err := SchemaPath()
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			tb.Fatalf("%v (%s is set: the schema must be there)", err, RequireEnv)
		}
		tb.Skipf("skipped: this test checks every herdr line against herdr's schema, which is not beside this clone (%v); "+
			"put herdr's shared/ folder beside the repository or set %s to run it", err, SchemaEnv)
	}
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if v, ok := schemaCache[path]; ok {
		return v
	}
	v, err := LoadSchema(path)
	if err != nil {
		tb.Fatal(err)
	}
	schemaCache[path] = v
	return v
}

// ValidateRequest checks one request line.
func (v *Validator) ValidateRequest(raw []byte) error {
	return validate(v.request, "request", raw)
}

// ValidateResponse checks one response line, as an error response when it
// has an "error" key and as a success response otherwise.
func (v *Validator) ValidateResponse(raw []byte) error {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("response %s: %w", raw, err)
	}
	if probe.Error != nil {
		return validate(v.failure, "error response", raw)
	}
	return validate(v.success, "success response", raw)
}

// ValidateEvent checks one event line: dotted names ("pane.output_matched")
// against the subscription event schema, snake_case ones against the
// lifecycle event schema.
func (v *Validator) ValidateEvent(raw []byte) error {
	var probe struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("event %s: %w", raw, err)
	}
	if bytes.ContainsRune([]byte(probe.Event), '.') {
		return validate(v.subEvent, "subscription event", raw)
	}
	return validate(v.event, "event", raw)
}

func validate(s *jsonschema.Schema, what string, raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, raw, err)
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			prune(ve)
			return fmt.Errorf("%s %s does not match herdr's schema: %v", what, bytes.TrimSpace(raw), ve)
		}
		return fmt.Errorf("%s %s: %w", what, raw, err)
	}
	return nil
}

// prune drops the oneOf branches that failed because their tag ("method",
// "type", "event") names another variant, so a report about one bad request
// lists what is wrong with it instead of all 100-odd methods.
func prune(e *jsonschema.ValidationError) {
	_, oneOf := e.ErrorKind.(*kind.OneOf)
	_, anyOf := e.ErrorKind.(*kind.AnyOf)
	var keep []*jsonschema.ValidationError
	for _, c := range e.Causes {
		if (oneOf || anyOf) && tagMismatch(c) {
			continue
		}
		prune(c)
		keep = append(keep, c)
	}
	e.Causes = keep
}

// tagMismatch reports whether a branch failed on its own tag; nested
// oneOfs (a subscription inside a request) belong to deeper branches.
func tagMismatch(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		return false
	case *kind.Const:
		if n := len(e.InstanceLocation); n > 0 {
			switch e.InstanceLocation[n-1] {
			case "method", "type", "event":
				return true
			}
		}
	}
	for _, c := range e.Causes {
		if tagMismatch(c) {
			return true
		}
	}
	return false
}
