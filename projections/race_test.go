//go:build race

package projections_test

// The race detector slows the fold about tenfold; the randomized tests
// use a smaller workload under it.
func init() { workloadScale = 4 }
