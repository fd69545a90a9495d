package fleettest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Do sends a request with body and the header pairs given (name, value,
// …) and returns the answer's status and body; it fails the test when
// there is no answer.
func Do(tb testing.TB, method, url, body string, header ...string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return res.StatusCode, b
}
