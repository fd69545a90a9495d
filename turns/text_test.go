package turns_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/turns"
)

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		name          string
		text, command string
		want          string
		norm          events.Normalization
		err           error
	}{
		{name: "a plain text is typed as it is", text: "write the tests", want: "write the tests"},
		{name: "control sequences are removed and counted", text: "a\x1b[31mb\x07c", want: "abc",
			norm: events.Normalization{ControlSequences: 2, RemovedBytes: 6}},
		{name: "CRLF becomes LF", text: "a\r\nb", want: "a\nb", norm: events.Normalization{CarriageReturns: 1, RemovedBytes: 1}},
		{name: "a command alone types no text", command: "/compact", want: ""},
		{name: "a text and a command are refused", text: "x", command: "/clear", err: turns.ErrTextAndCommand},
		{name: "neither a text nor a command is refused", err: turns.ErrEmptyText},
		{name: "white space only is refused", text: "  \n\t", err: turns.ErrEmptyText},
		{name: "a text of control sequences only is refused", text: "\x1b[2J\x1b]0;title\x07", err: turns.ErrEmptyText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, norm, err := turns.CheckText(tc.text, tc.command)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err != nil {
				return
			}
			if got != tc.want || norm != tc.norm {
				t.Errorf("got %q %+v, want %q %+v", got, norm, tc.want, tc.norm)
			}
		})
	}
}

func TestLimitsCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limits    turns.Limits
		text      string
		tooLarge  bool
		limit     int
		byPayload bool
	}{
		{name: "the zero limits bound nothing", text: strings.Repeat("a", 1<<20)},
		{name: "a text at MaxText fits", limits: turns.Limits{MaxText: 10}, text: strings.Repeat("a", 10)},
		{name: "a text over MaxText is too large", limits: turns.Limits{MaxText: 10}, text: strings.Repeat("a", 11),
			tooLarge: true, limit: 10},
		{name: "a text whose event fits max_payload fits", limits: turns.Limits{MaxPayload: 8192}, text: strings.Repeat("a", 2048)},
		{name: "a text whose event could not fit max_payload is too large", limits: turns.Limits{MaxText: 1 << 20, MaxPayload: 8192},
			text: strings.Repeat("a", 2049), tooLarge: true, limit: 2048, byPayload: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limits.Check(tc.text)
			if got := errors.Is(err, turns.ErrTooLarge); got != tc.tooLarge {
				t.Fatalf("err = %v, want too large %t", err, tc.tooLarge)
			}
			if !tc.tooLarge {
				return
			}
			se, ok := errors.AsType[*turns.SizeError](err)
			if !ok {
				t.Fatalf("err = %T, want *SizeError", err)
			}
			if se.Bytes != len(tc.text) || se.Limit != tc.limit || (se.MaxPayload > 0) != tc.byPayload {
				t.Errorf("SizeError %+v, want bytes %d limit %d by max_payload %t", se, len(tc.text), tc.limit, tc.byPayload)
			}
		})
	}
}
