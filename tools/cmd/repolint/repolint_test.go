package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo is a temporary git repository the tests commit into.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "--quiet")
	r.write("README.md", "# Demo\n\nSee [the guide](docs/guide.md#set-up) and [below](#demo).\n", 0o644)
	r.write("docs/guide.md", "# Guide\n\n## Set up\n\nBack to [the README](../README.md).\n", 0o644)
	r.commit("start")
	return r
}

func (r *repo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (r *repo) write(name, content string, mode os.FileMode) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "--quiet", "--allow-empty", "-m", msg)
}

// lint runs the checks as make lint does and returns the exit code and
// what was printed.
func (r *repo) lint() (int, string) {
	var out bytes.Buffer
	code := run(r.dir, 1<<20, &out)
	return code, out.String()
}

// elf is a file of n bytes that opens with an ELF header.
func elf(n int) string {
	b := make([]byte, n)
	copy(b, "\x7fELF\x02\x01\x01")
	return string(b)
}

func TestCleanRepositoryPasses(t *testing.T) {
	r := newRepo(t)
	if code, out := r.lint(); code != 0 {
		t.Fatalf("exit %d on a clean repository:\n%s", code, out)
	}
}

// TestCommittedThreeMBBinaryFails: the "must show" of issue 40.
func TestCommittedThreeMBBinaryFails(t *testing.T) {
	r := newRepo(t)
	r.write("bench", elf(3<<20), 0o755)
	r.commit("track a 3 MB binary")
	code, out := r.lint()
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"bench: a tracked binary (ELF, 3.0 MB)", "bench: 3.0 MB tracked, over the 1.0 MB allowed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSmallBinaryAndMachOAndPEFail(t *testing.T) {
	macho := make([]byte, 64)
	binary.BigEndian.PutUint32(macho, 0xcffaedfe)
	pe := make([]byte, 256)
	copy(pe, "MZ")
	binary.LittleEndian.PutUint32(pe[0x3c:], 0x80)
	copy(pe[0x80:], "PE\x00\x00")
	for name, content := range map[string]string{"tool": elf(100), "tool-darwin": string(macho), "tool.exe": string(pe)} {
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			r.write(name, content, 0o644)
			r.commit("track " + name)
			code, out := r.lint()
			if code != 1 || !strings.Contains(out, name+": a tracked binary") {
				t.Fatalf("exit %d, want 1 naming %s:\n%s", code, name, out)
			}
		})
	}
}

func TestExecutableThatIsNoScriptFails(t *testing.T) {
	r := newRepo(t)
	r.write("run.sh", "#!/bin/sh\necho ok\n", 0o755)
	r.write("blob", "just bytes, not a script\n", 0o755)
	r.commit("two executables")
	code, out := r.lint()
	if code != 1 || !strings.Contains(out, "blob: tracked as executable but no script") {
		t.Fatalf("exit %d, want 1 naming blob:\n%s", code, out)
	}
	if strings.Contains(out, "run.sh") {
		t.Errorf("a script was refused:\n%s", out)
	}
}

func TestLargeFileOutsideDataFoldersFails(t *testing.T) {
	r := newRepo(t)
	big := strings.Repeat("text line\n", 200<<10) // 2 MB of text
	r.write("proxy/fixtures/recorded.jsonl", big, 0o644)
	r.write("proxy/translate/testdata/big.txt", big, 0o644)
	r.commit("large data in fixtures and testdata")
	if code, out := r.lint(); code != 0 {
		t.Fatalf("exit %d for large files in fixtures/ and testdata/:\n%s", code, out)
	}
	r.write("docs/huge.txt", big, 0o644)
	r.commit("large file in docs")
	code, out := r.lint()
	if code != 1 || !strings.Contains(out, "docs/huge.txt: 2.0 MB tracked, over the 1.0 MB allowed") {
		t.Fatalf("exit %d, want 1 naming docs/huge.txt:\n%s", code, out)
	}
}

// TestBrokenAnchorFails: the other "must show" of issue 40.
func TestBrokenAnchorFails(t *testing.T) {
	r := newRepo(t)
	r.write("README.md", "# Demo\n\nSee [the guide](docs/guide.md#setup).\n", 0o644)
	r.commit("an anchor the guide does not have")
	code, out := r.lint()
	if code != 1 || !strings.Contains(out, `README.md:3: link "docs/guide.md#setup": docs/guide.md has no heading with the anchor #setup`) {
		t.Fatalf("exit %d, want 1 naming the anchor:\n%s", code, out)
	}
}

func TestBrokenLinksFail(t *testing.T) {
	r := newRepo(t)
	r.write("docs/guide.md", "# Guide\n\n## Set up\n\n"+
		"[gone](missing.md), [same page](#nowhere), [out](../../etc/passwd),\n"+
		"[ref]: ../deploy/none.yaml\n", 0o644)
	r.commit("broken links")
	code, out := r.lint()
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		`docs/guide.md:5: link "missing.md": docs/missing.md is not a tracked file or folder`,
		`docs/guide.md:5: link "#nowhere": docs/guide.md has no heading with the anchor #nowhere`,
		`docs/guide.md:5: link "../../etc/passwd": points outside the repository`,
		`docs/guide.md:6: link "../deploy/none.yaml": deploy/none.yaml is not a tracked file or folder`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

func TestUntrackedTargetFails(t *testing.T) {
	r := newRepo(t)
	r.write("README.md", "# Demo\n\n[binary](bin/proxy)\n", 0o644)
	r.commit("a link to a build output")
	r.write("bin/proxy", "built, ignored, not tracked", 0o644)
	code, out := r.lint()
	if code != 1 || !strings.Contains(out, "bin/proxy is not a tracked file or folder") {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
}

func TestSlugsAsGitHub(t *testing.T) {
	s := newSlugger()
	for _, c := range []struct{ heading, want string }{
		{"Web search (`search_settings`)", "web-search-search_settings"},
		{"Backend pools: several servers behind one alias", "backend-pools-several-servers-behind-one-alias"},
		{"Per-user keys, limits, usage and `/admin`", "per-user-keys-limits-usage-and-admin"},
		{"Codex CLI (`POST /v1/responses`)", "codex-cli-post-v1responses"},
		{"Chat notifications when a turn ends (`notify-chat`)", "chat-notifications-when-a-turn-ends-notify-chat"},
		{"1. Create the webhook", "1-create-the-webhook"},
		{"Kubernetes: the [Helm chart](deploy/helm)", "kubernetes-the-helm-chart"},
		{"Émoji ✅ done", "émoji--done"},
		{"Settings", "settings"},
		{"Settings", "settings-1"},
		{"Settings", "settings-2"},
		{"Settings 1", "settings-1-1"},
	} {
		if got := s.slug(headingText(c.heading)); got != c.want {
			t.Errorf("%q: slug %q, want %q", c.heading, got, c.want)
		}
	}
}

func TestPageAnchorsSkipCodeAndReadHTMLIDs(t *testing.T) {
	md := "# Title #\n\n```sh\n# not a heading\n```\n\n<a id=\"custom\"></a>\n\n#no-space\n\n## Title\n"
	a := pageAnchors(md)
	for _, want := range []string{"title", "title-1", "custom"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	for _, not := range []string{"not-a-heading", "no-space"} {
		if a[not] {
			t.Errorf("anchor %q from what is no heading", not)
		}
	}
}

func TestPageLinksSkipCode(t *testing.T) {
	md := "Run `codex exec\n[x](in-code.md)` then [real](a.md \"title\") and ![img](<docs/a b.png>).\n\n" +
		"```md\n[fenced](fenced.md)\n```\n\n<img src=\"logo.svg\"> [ref]: ref.md\n[label]: defined.md\n"
	var got []string
	for _, l := range pageLinks(md) {
		got = append(got, l.target)
	}
	want := "a.md docs/a b.png logo.svg defined.md"
	if strings.Join(got, " ") != want {
		t.Fatalf("links %q, want %q", strings.Join(got, " "), want)
	}
}
