package fleetd_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is how long the README may grow: it is the front door,
// read in five minutes; the reference lives in docs/.
const readmeMaxLines = 250

// The README stays short enough to read before running anything.
func TestREADMEIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "\n"); got > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move the reference into docs/", got, readmeMaxLines)
	}
}

// Every relative link of the README and docs/*.md names a file that exists,
// and every #anchor names a heading of its page, as GitHub renders it.
func TestDocsLinksResolve(t *testing.T) {
	pages := docPages(t)
	for _, p := range pages {
		for _, l := range markdownLinks(t, p) {
			if err := checkLink(p, l); err != nil {
				t.Errorf("%s:%d: link %q: %v", p, l.line, l.target, err)
			}
		}
	}
}

// The README's table of contents reaches every page of docs/.
func TestDocsEveryPageIsLinkedFromTheREADME(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range markdownLinks(t, "README.md") {
		file, _, _ := strings.Cut(l.target, "#")
		linked[path.Clean(file)] = true
	}
	for _, p := range docPages(t) {
		if p != "README.md" && !linked[p] {
			t.Errorf("%s is not linked from README.md: add it to the README's table of contents", p)
		}
	}
}

// Checking the checker: slugs as GitHub makes them, and links it must refuse.
func TestDocsSlugsAndBrokenLinks(t *testing.T) {
	for heading, want := range map[string]string{
		"Running it":                                   "running-it",
		"Tapping it with `nats`":                       "tapping-it-with-nats",
		"When something is wrong: `fleetd doctor`":     "when-something-is-wrong-fleetd-doctor",
		"Mains, leads and their inboxes":               "mains-leads-and-their-inboxes",
		"The `bwrap` profile, **built in**":            "the-bwrap-profile-built-in",
		"HTTP API: `POST /message` & errors":           "http-api-post-message--errors",
		"snake_case and kebab-case":                    "snake_case-and-kebab-case",
		"A [link](docs/x.md) in a heading":             "a-link-in-a-heading",
		"Numbers: 1,000 agents / 10 hosts (≤ 300 ms)":  "numbers-1000-agents--10-hosts--300-ms",
		"Ünïcode letters stay":                         "ünïcode-letters-stay",
		"  Trailing spaces and #hash  ":                "trailing-spaces-and-hash",
		"Doctor — what it checks":                      "doctor--what-it-checks",
		"`fleetd up --retain 7d,2GiB` and the default": "fleetd-up---retain-7d2gib-and-the-default",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}

	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("other.md", "# Other\n\n## Same\n\n## Same\n")
	write("page.md", strings.Join([]string{
		"# Page",
		"[ok](#page) [ok](other.md) [ok](other.md#same-1) [ok](https://example.com/x.md#nope)",
		"`[code](nowhere.md)` and ![img](other.md)",
		"```sh",
		"# not a heading",
		"[in a fence](nowhere.md)",
		"```",
		"[bad](nowhere.md) [bad](#no-such) [bad](other.md#same-2) [bad](#not-a-heading) [a link over",
		"two lines](#page-1) `a span over",
		"two lines [no link](nowhere.md)`",
		"[ref]: nowhere-ref.md",
	}, "\n"))
	var bad []string
	for _, l := range markdownLinks(t, page) {
		if checkLink(page, l) != nil {
			bad = append(bad, l.target)
		}
	}
	if got, want := strings.Join(bad, " "), "nowhere.md #no-such other.md#same-2 #not-a-heading #page-1 nowhere-ref.md"; got != want {
		t.Errorf("broken links found: %s, want %s", got, want)
	}
}

// docPages lists the pages the link test reads: the README and docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, docs...)
}

// link is one Markdown link: its target as written and the line it is on.
type link struct {
	target string
	line   int
}

var (
	// inlineLink matches [text](target) and ![alt](target); the target
	// stops at a space (a title may follow) or the closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink matches a reference definition, [name]: target.
	refLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:[ \t]*<?([^\s>]+)>?`)
	// codeSpan matches inline code, whose brackets are no links.
	codeSpan = regexp.MustCompile("(`+)[^`]*?(`+)")
)

// markdownLinks returns the links of a Markdown file outside code; a
// link's text may run over lines.
func markdownLinks(t *testing.T, file string) []link {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Code spans become "``", keeping their newlines so line numbers hold.
	text := codeSpan.ReplaceAllStringFunc(strings.Join(proseLines(string(b)), "\n"), func(span string) string {
		return "``" + strings.Repeat("\n", strings.Count(span, "\n"))
	})
	var out []link
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			out = append(out, link{target: text[m[2]:m[3]], line: 1 + strings.Count(text[:m[0]], "\n")})
		}
	}
	return out
}

// proseLines returns the file's lines with those inside fenced code blocks
// blanked, so a line's index is still its line number minus one.
func proseLines(s string) []string {
	lines := strings.Split(s, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// checkLink reports what is wrong with a link found in file: a relative
// target that does not exist, or an anchor no heading of its page has.
// Absolute URLs are not checked.
func checkLink(file string, l link) error {
	target := l.target
	if u, _, _ := strings.Cut(target, ":"); u != target && !strings.ContainsAny(u, "/#.") {
		return nil // a scheme: https:, mailto:
	}
	rel, anchor, hasAnchor := strings.Cut(target, "#")
	page := file
	if rel != "" {
		page = filepath.Join(filepath.Dir(file), filepath.FromSlash(rel))
		if _, err := os.Stat(page); err != nil {
			return fmt.Errorf("no file %s", page)
		}
	}
	if !hasAnchor {
		return nil
	}
	if !strings.HasSuffix(page, ".md") {
		return fmt.Errorf("an anchor into %s, which is not Markdown", page)
	}
	anchors, err := headingAnchors(page)
	if err != nil {
		return err
	}
	if !anchors[anchor] {
		return fmt.Errorf("%s has no heading whose anchor is #%s", page, anchor)
	}
	return nil
}

// atxHeading matches a Markdown heading line, # to ######.
var atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$`)

// headingAnchors returns the anchors GitHub gives a file's headings: the
// slug, and for its n-th repeat the slug with -n.
func headingAnchors(file string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(string(b)) {
		m := atxHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		a := s
		if n := seen[s]; n > 0 {
			a = fmt.Sprintf("%s-%d", s, n)
		}
		seen[s]++
		anchors[a] = true
	}
	return anchors, nil
}

// mdLink matches a link inside a heading, whose text alone makes the slug.
var mdLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: the rendered text lowercased,
// every character but letters, digits, spaces, '-' and '_' removed, and
// each space made '-'.
func slug(heading string) string {
	heading = mdLink.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
