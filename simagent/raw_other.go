//go:build !linux

package simagent

import "errors"

// MakeRaw is only implemented on Linux; elsewhere the terminal stays as
// it is.
func MakeRaw(fd int) (restore func() error, err error) {
	return nil, errors.New("simagent: raw mode is implemented on linux only")
}
