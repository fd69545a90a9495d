package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// markWatch tells when a floor agent's Stop hook ran: the hook truncates
// a file named after its agent in dir (`: >dir/<agent>`, a shell builtin,
// no process of its own), and inotify wakes the watcher as the file is
// closed. The floor's turn ends at that moment, read without polling, so
// the floor gets no delay from how it is watched.
type markWatch struct {
	f    *os.File
	mu   sync.Mutex
	subs map[string]chan time.Time
}

// watchMarks watches dir (which exists) for marks.
func watchMarks(dir string) (*markWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("floor marks: inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CLOSE_WRITE); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("floor marks: watch %s: %w", dir, err)
	}
	// Non-blocking, so the runtime's poller waits for it: Close wakes the
	// reader, and a mark wakes it as a network read would.
	w := &markWatch{f: os.NewFile(uintptr(fd), "inotify"), subs: map[string]chan time.Time{}}
	go w.loop()
	return w, nil
}

// marks is the channel that gets the time of each of name's marks.
func (w *markWatch) marks(name string) chan time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.subs[name]
	if !ok {
		c = make(chan time.Time, 16)
		w.subs[name] = c
	}
	return c
}

func (w *markWatch) loop() {
	buf := make([]byte, 16<<10)
	for {
		n, err := w.f.Read(buf)
		at := time.Now()
		if errors.Is(err, os.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			c := w.marks(string(bytes.TrimRight(name, "\x00")))
			select {
			case c <- at:
			default: // nobody waits for that many
			}
		}
	}
}

func (w *markWatch) Close() error { return w.f.Close() }
