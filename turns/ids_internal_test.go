package turns

import "testing"

// The ids of a turn's attempts are part of the log: routers and gateways
// of two versions must derive the same ones, or a step would be stored
// twice. These are the ids every version so far derived.
func TestAttemptIDsAreTheOnesEarlierVersionsWrote(t *testing.T) {
	turn := "01JF6Z8K3Q4V5W6X7Y8Z9A0B1C"
	for _, c := range []struct {
		kind string
		n    int
		want string
	}{
		{"release", 1, "01JF6Z8K3QB7A0Y80FHZNBZT55"},
		{"assign", 2, "01JF6Z8K3Q6S5SFJYD3C1TMXVP"},
	} {
		if got := attemptID(c.kind, turn, c.n); got != c.want {
			t.Errorf("attemptID(%s, %d) = %s, want %s", c.kind, c.n, got, c.want)
		}
	}
}
