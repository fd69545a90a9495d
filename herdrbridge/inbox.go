package herdrbridge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sys/unix"
)

// InboxDir is where, under an agent's working directory, the texts that
// go as files are written. It holds a .gitignore of "*", so nothing in it
// is ever committed from the agent's checkout.
const InboxDir = ".fleet/inbox"

// inboxKeep is how long an inbox file is kept: long enough for the agent
// to read it again later in its conversation.
const inboxKeep = 7 * 24 * time.Hour

// The inbox's caps, on fleetd's own files only (the agent's are its own
// business): at most inboxMaxFiles files and inboxMaxBytes bytes, the
// oldest removed first to make room for a new one. A text is at most the
// shim's limit (a few MiB at most), so the caps keep many recent texts —
// which the agent may read again later — while a flood of long texts
// cannot fill the agent's disk.
const (
	inboxMaxFiles = 500
	inboxMaxBytes = 64 << 20
)

// ErrInboxUnsafe means the agent's .fleet/ or .fleet/inbox is not a plain
// directory of fleetd's user (a symlink, a file, someone else's): fleetd
// writes nothing there.
var ErrInboxUnsafe = errors.New("the agent's inbox directory is not safe to write")

// writeInbox writes a turn's text to <cwd>/.fleet/inbox/<turn>.md and
// returns the file and how a prompt names it (ref: the absolute path, or
// one relative to cwd when the absolute one holds white space, which
// ends an @ mention); the agent's kind makes the short prompt that hands
// it over (Kind.HandOver).
//
// The agent can write its working directory, fleetd's gateway may run
// with more rights than the agent (outside its sandbox, even as root):
// so every step below cwd is opened from the one before without
// following a symlink (openat with O_NOFOLLOW, one name at a time), .fleet
// and inbox must be real directories owned by fleetd's user, the
// .gitignore is only ever created (O_EXCL: an existing one, even a
// dangling symlink, is left as it is), and the prune removes only
// fleetd's own <ULID>.md files. A directory that fails is refused with
// ErrInboxUnsafe, and nothing is written anywhere else.
func writeInbox(cwd, turn, text, why string) (file, ref string, err error) {
	if cwd == "" {
		return "", "", errors.New("the agent's working directory is not known")
	}
	if !filepath.IsAbs(cwd) || filepath.Clean(cwd) == "/" {
		return "", "", fmt.Errorf("%w: the agent's working directory %q is not one fleetd writes in", ErrInboxUnsafe, cwd)
	}
	if _, err := ulid.ParseStrict(turn); err != nil {
		return "", "", fmt.Errorf("the turn id %q is not a ULID: %w", turn, err)
	}
	inbox, err := openInbox(cwd)
	if err != nil {
		return "", "", err
	}
	defer unix.Close(inbox)
	name := turn + ".md"
	if err := pruneInbox(inbox, time.Now().Add(-inboxKeep), name, int64(len(text))); err != nil {
		return "", "", err
	}
	if err := writeAt(inbox, name, text); err != nil {
		return "", "", fmt.Errorf("write %s: %w", filepath.Join(cwd, InboxDir, name), err)
	}
	file = filepath.Join(cwd, InboxDir, name)
	// The absolute path names the file whatever Claude Code's own working
	// directory is; an @ mention ends at whitespace, so a directory with a
	// space in it is named relative to the agent's working directory.
	ref = file
	if strings.ContainsAny(ref, " \t") {
		ref = filepath.Join(InboxDir, name)
	}
	if strings.ContainsAny(ref, " \t") {
		return "", "", fmt.Errorf("the inbox file %s has whitespace in its path, which an @ mention cannot name", file)
	}
	return file, ref, nil
}

// openInbox opens <cwd>/.fleet/inbox, creating what is missing, one name
// at a time without following symlinks, and writes .fleet/.gitignore when
// there is none. It returns the inbox's descriptor.
func openInbox(cwd string) (int, error) {
	root, err := unix.Open(cwd, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the agent's working directory %s: %w", cwd, err)
	}
	defer unix.Close(root)
	fleet, err := subdir(root, cwd, ".fleet")
	if err != nil {
		return -1, err
	}
	defer unix.Close(fleet)
	// O_EXCL never follows a symlink: an existing .gitignore, a dangling
	// link included, is left alone and nothing is created elsewhere.
	fd, err := unix.Openat(fleet, ".gitignore", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	switch {
	case err == nil:
		f := os.NewFile(uintptr(fd), filepath.Join(cwd, ".fleet", ".gitignore"))
		_, err = f.WriteString("# fleetd's per-agent files (texts handed over as files): never committed\n*\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return -1, err
		}
	case !errors.Is(err, unix.EEXIST):
		return -1, fmt.Errorf("write %s: %w", filepath.Join(cwd, ".fleet", ".gitignore"), err)
	}
	return subdir(fleet, filepath.Join(cwd, ".fleet"), "inbox")
}

// subdir opens (creating it 0700 when missing) the directory name in
// parent, refusing a symlink, anything not a directory, and a directory
// of another user.
func subdir(parent int, parentPath, name string) (int, error) {
	path := filepath.Join(parentPath, name)
	if err := unix.Mkdirat(parent, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("create %s: %w", path, err)
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		// ELOOP: a symlink; ENOTDIR: a file (or a link to one).
		return -1, fmt.Errorf("%w: %s is not a directory (%w)", ErrInboxUnsafe, path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat %s: %w", path, err)
	}
	if int(st.Uid) != os.Geteuid() {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s belongs to uid %d, not fleetd's %d", ErrInboxUnsafe, path, st.Uid, os.Geteuid())
	}
	return fd, nil
}

// writeAt writes text to a new file name in dir, replacing an earlier
// write of the same turn (a retried delivery); a symlink there is
// removed, never followed.
func writeAt(dir int, name, text string) error {
	if err := unix.Unlinkat(dir, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ownFile is one of fleetd's files in an inbox: <ULID>.md, a regular
// file.
type ownFile struct {
	name string
	at   time.Time
	size int64
}

// pruneInbox removes fleetd's own files older than before, then the
// oldest of the rest until a new file of size bytes (named next, which
// replaces one of the same name) fits the caps. Only regular files named
// <ULID>.md are fleetd's: anything else in the directory is the agent's
// and is neither counted nor touched. A file over the bytes cap by itself
// is refused.
func pruneInbox(dir int, before time.Time, next string, size int64) error {
	if size > inboxMaxBytes {
		return fmt.Errorf("the text is %d bytes, over the inbox's cap of %d", size, inboxMaxBytes)
	}
	d, err := unix.Dup(dir)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(d), InboxDir)
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	var own []ownFile
	var total int64
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".md")
		if _, err := ulid.ParseStrict(id); !ok || err != nil || name == next {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		// When it was written, as the prune always went by.
		at := time.Unix(st.Mtim.Unix())
		if at.Before(before) {
			unix.Unlinkat(dir, name, 0)
			continue
		}
		own = append(own, ownFile{name: name, at: at, size: st.Size})
		total += st.Size
	}
	slices.SortFunc(own, func(a, b ownFile) int { return a.at.Compare(b.at) })
	for len(own) > 0 && (len(own)+1 > inboxMaxFiles || total+size > inboxMaxBytes) {
		unix.Unlinkat(dir, own[0].name, 0)
		total -= own[0].size
		own = own[1:]
	}
	return nil
}
