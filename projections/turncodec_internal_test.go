package projections

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// TestEncodeTurn holds encodeTurn to encode's bytes: a zero turn, a turn
// with every field set (found by reflection, so a field added to Turn
// and not to encodeTurn fails here), each field alone, strings that need
// escaping, and times and costs plain notation does not take.
func TestEncodeTurn(t *testing.T) {
	same := func(t *testing.T, what string, turn lifecycle.Turn) {
		t.Helper()
		want, werr := encode(turn)
		got, gerr := encodeTurn(&turn)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%s: encode's error %v, encodeTurn's %v", what, werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	same(t, "zero", lifecycle.Turn{})

	full := lifecycle.Turn{}
	fillFields(t, reflect.ValueOf(&full).Elem(), 1)
	same(t, "every field", full)

	// Each field alone, so an omitted one is caught however it is set.
	ty := reflect.TypeOf(full)
	for i := range ty.NumField() {
		one := lifecycle.Turn{}
		reflect.ValueOf(&one).Elem().Field(i).Set(reflect.ValueOf(full).Field(i))
		same(t, ty.Field(i).Name+" alone", one)
	}

	hard := []string{"", "plain", "a\nb\tc\r", `quote " and \ back`, "<b>&amp;</b>", "\x00\x01\x1f\x7f",
		"héllo wörld", "emoji 🚀", "\u2028\u2029", "bad \xff utf8 \xc3", "中文", "/slash/"}
	for _, s := range hard {
		turn := full
		turn.Text, turn.Reply, turn.Context, turn.OtherPrompts = s, s, []string{s, "x"}, []string{s}
		same(t, "string "+s, turn)
	}
	turn := full
	turn.Context, turn.OtherPrompts = []string{}, nil
	same(t, "empty slices", turn)

	zones := []*time.Location{time.UTC, time.FixedZone("plus", 5*3600+30*60), time.FixedZone("minus", -8*3600),
		time.FixedZone("seconds", 3600+17), time.FixedZone("day", 24*3600), time.FixedZone("minusday", -24*3600-60), time.Local}
	times := []time.Time{
		time.Date(2026, 12, 4, 5, 6, 7, 0, time.UTC),
		time.Date(2026, 12, 4, 5, 6, 7, 123456789, time.UTC),
		time.Date(2026, 12, 4, 5, 6, 7, 120000000, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1, 0),
	}
	for _, tm := range times {
		for _, z := range zones {
			turn := full
			turn.RepliedAt, turn.Deadline = tm.In(z), tm.In(z)
			same(t, "time "+tm.In(z).String(), turn)
		}
	}

	costs := []float64{0, math.Copysign(0, -1), 0.0007, 1, -2.5, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.123, 1.0 / 3,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.NaN()}
	for _, c := range costs {
		turn := full
		turn.CostUSD = c
		same(t, "cost "+strconv.FormatFloat(c, 'g', -1, 64), turn)
	}

	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		turn := lifecycle.Turn{}
		v := reflect.ValueOf(&turn).Elem()
		for f := range v.NumField() {
			if r.IntN(2) == 0 {
				fill(t, v.Field(f), i+f)
			}
		}
		same(t, "random", turn)
	}
}

// fillFields fills every field of the struct v.
func fillFields(t *testing.T, v reflect.Value, n int) {
	t.Helper()
	for i := range v.NumField() {
		fill(t, v.Field(i), n+i)
	}
}

// fill sets v, and every field within it, to something not zero.
func fill(t *testing.T, v reflect.Value, n int) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+n%26)) + "-01JXYZ")
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(n + 1))
	case reflect.Uint64:
		v.SetUint(uint64(n + 7))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(0.0007 * float64(n+1))
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("fill: no case for %s", v.Type())
		}
		v.Set(reflect.ValueOf([]string{"one", "two"}))
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 4, 5, n%60, 7, n*1000, time.UTC)))
			return
		}
		switch v.Type() {
		case reflect.TypeOf(events.Normalization{}), reflect.TypeOf(events.Tokens{}):
		default:
			t.Fatalf("fill: no case for %s (encodeTurn must write it)", v.Type())
		}
		fillFields(t, v, n)
	default:
		t.Fatalf("fill: no case for %s", v.Type())
	}
}

func BenchmarkEncodeTurn(b *testing.B) {
	turn := lifecycle.Turn{}
	fillFields(&testing.T{}, reflect.ValueOf(&turn).Elem(), 1)
	turn.Context, turn.OtherPrompts, turn.Deadline = nil, nil, time.Time{}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := encode(turn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encodeTurn", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeTurn(&turn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
