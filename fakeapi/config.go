package fakeapi

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// Config configures a Server. The zero value is ready to use: it listens on a
// free loopback port and answers with DefaultRules.
type Config struct {
	// Addr is the listen address used by Start; default "127.0.0.1:0".
	Addr string
	// Rules answer model calls of every protocol, first match wins; nil means
	// DefaultRules(). A call no rule matches gets an echo.
	Rules []Rule
	// Chunks is how many deltas (text_delta events, output_text.delta
	// events, chat chunks, Gemini frames) a streamed text is split into;
	// default 3.
	Chunks int
	// NewID returns a fresh id with the given prefix ("msg_", "toolu_",
	// "req_", "resp_", "call_", "chatcmpl-", …); default random.
	NewID func(prefix string) string
	// Now is the clock stamped on recorded requests; default time.Now.
	Now func() time.Time
	// Models are the model ids GET /v1/models and GET /v1beta/models
	// list; default the ones
	// Claude Code 2.1.328 asks for (claude-opus-5-5, claude-sonnet-5, …).
	Models []string
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Rules == nil {
		c.Rules = DefaultRules()
	}
	if c.Chunks == 0 {
		c.Chunks = 3
	}
	if c.NewID == nil {
		c.NewID = randomID
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.Models) == 0 {
		c.Models = []string{"claude-opus-5-5", "claude-sonnet-5", "claude-haiku-4-5"}
	}
}

// Validate reports every problem with the config at once.
func (c Config) Validate() error {
	var errs []error
	if c.Chunks < 0 {
		errs = append(errs, fmt.Errorf("chunks %d: must not be negative", c.Chunks))
	}
	for i, r := range c.Rules {
		if r.Match == nil {
			errs = append(errs, fmt.Errorf("rule %d (%q): no Match", i, r.Name))
		}
		if r.Reply == nil {
			errs = append(errs, fmt.Errorf("rule %d (%q): no Reply", i, r.Name))
		}
	}
	return errors.Join(errs...)
}

// Option adjusts the Config of a server made by the Start test helper.
type Option func(*Config)

// WithRules replaces the default rules with rules.
func WithRules(rules ...Rule) Option {
	return func(c *Config) { c.Rules = rules }
}

// WithExtraRules tries rules before the default ones, to add a scripted
// answer to an otherwise default fake.
func WithExtraRules(rules ...Rule) Option {
	return func(c *Config) {
		base := c.Rules
		if base == nil {
			base = DefaultRules()
		}
		c.Rules = append(append([]Rule(nil), rules...), base...)
	}
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomID returns prefix followed by 24 random base62 characters, the shape
// of real Anthropic ids.
func randomID(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}
