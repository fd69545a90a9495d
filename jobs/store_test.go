package jobs_test

import (
	"testing"

	"github.com/fleetd/fleetd/jobs"
)

func TestStoreLaterItemReplacesEarlierWhateverTheOrder(t *testing.T) {
	s := jobs.NewStore()
	s.Put(jobs.Item{Key: "k", Text: "new", Seq: 5})
	s.Put(jobs.Item{Key: "k", Text: "old", Seq: 2})
	if it, _ := s.Get("k"); it.Text != "new" || it.Size != 3 {
		t.Errorf("k = %+v, want the newer text with its size", it)
	}
}
