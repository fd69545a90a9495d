//go:build !linux

package simagent

import "errors"

// MakeRaw is only implemented on Linux; elsewhere the terminal stays as
// it is.
func MakeRaw(fd int) (restore func() error, err error) {
	return nil, errors.New("simagent: raw mode is implemented on linux only")
}

// termWidth is 0 (unknown) off Linux, so the screen assumes 80 columns.
func termWidth(any) int { return 0 }
