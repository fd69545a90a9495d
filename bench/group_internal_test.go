package bench

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// A group times every op once a round, each round's order turned by one,
// each round with an op made afresh; a row compares two ops' medians,
// its N the events the first stored.
func TestGroupTimesEveryOpOnceARoundInTurnedOrder(t *testing.T) {
	s := stage{StageConfig: StageConfig{Size: Size{BenchTime: 2 * time.Millisecond}, Progress: io.Discard}}
	var order []string
	made := map[string]int{}
	op := func(name string) timed {
		return timed{name, func() Op {
			made[name]++
			first := true
			return func(context.Context, int) error {
				if first {
					order, first = append(order, name), false
				}
				return nil
			}
		}}
	}
	got, err := s.group(context.Background(), 10, op("a"), op("b"), op("c"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields("a b c  b c a  c a b  a b c")
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	for _, name := range []string{"a", "b", "c"} {
		if made[name] != pairRounds {
			t.Errorf("op %s made %d times, want once a round (%d)", name, made[name], pairRounds)
		}
	}
	for i, r := range got.rates {
		if r <= 0 {
			t.Errorf("op %s: rate %v", got.ops[i].name, r)
		}
	}
	row := got.row(2, 0)
	if row.P50 != got.rates[2] || row.Base != got.rates[0] || row.BaseName != "a" || row.N != got.n[2] || row.N%10 != 0 || row.N == 0 {
		t.Errorf("row %+v: want c against a, N the events c stored", row)
	}
}

// A failing op ends the group with an error naming it.
func TestGroupNamesTheOpThatFailed(t *testing.T) {
	s := stage{StageConfig: StageConfig{Size: Size{BenchTime: time.Millisecond}, Progress: io.Discard}}
	boom := errors.New("boom")
	ok := timed{"fine", func() Op { return func(context.Context, int) error { return nil } }}
	bad := timed{"broken", func() Op { return func(context.Context, int) error { return boom } }}
	_, err := s.group(context.Background(), 1, ok, bad)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("got %v, want boom, naming the op", err)
	}
}
