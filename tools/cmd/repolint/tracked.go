package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// tracked is one file of git's index.
type tracked struct {
	Path       string // slash-separated, from the repository's top
	Executable bool   // mode 100755
	Link       bool   // a symbolic link or a submodule: not a file to read
}

// trackedFiles lists git's index of the repository at dir.
func trackedFiles(dir string) ([]tracked, error) {
	cmd := exec.Command("git", "-C", dir, "ls-files", "--stage", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	var files []tracked
	for _, entry := range bytes.Split(out, []byte{0}) {
		if len(entry) == 0 {
			continue
		}
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := bytes.Cut(entry, []byte{'\t'})
		if !ok {
			return nil, fmt.Errorf("git ls-files: unexpected entry %q", entry)
		}
		mode, _, _ := bytes.Cut(meta, []byte{' '})
		files = append(files, tracked{
			Path:       string(path),
			Executable: string(mode) == "100755",
			Link:       string(mode) == "120000" || string(mode) == "160000",
		})
	}
	return files, nil
}

// checkTracked reads each tracked file's head and size: binaries anywhere,
// and files over maxBytes outside fixtures/ and testdata/, are findings.
func checkTracked(dir string, files []tracked, maxBytes int64) []string {
	var findings []string
	for _, f := range files {
		if f.Link {
			continue
		}
		file, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			continue // deleted in the work tree: git status shows it, the next commit drops it
		}
		info, err := file.Stat()
		if err != nil || !info.Mode().IsRegular() {
			file.Close()
			continue
		}
		head := make([]byte, 4096)
		n, _ := io.ReadFull(file, head)
		file.Close()
		head = head[:n]
		if kind := binaryKind(head); kind != "" {
			findings = append(findings, fmt.Sprintf("%s: a tracked binary (%s, %s): remove it with git rm --cached and cover it in .gitignore", f.Path, kind, size(info.Size())))
		} else if f.Executable && !bytes.HasPrefix(head, []byte("#!")) {
			findings = append(findings, fmt.Sprintf("%s: tracked as executable but no script (no #! line): a binary? remove it, or git update-index --chmod=-x", f.Path))
		}
		if info.Size() > maxBytes && !inDataFolder(f.Path) {
			findings = append(findings, fmt.Sprintf("%s: %s tracked, over the %s allowed outside fixtures/ and testdata/", f.Path, size(info.Size()), size(maxBytes)))
		}
	}
	return findings
}

// binaryKind names the executable format a file's head starts with, or "".
func binaryKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF"
	case len(head) >= 4 && isMachO(binary.BigEndian.Uint32(head)):
		return "Mach-O"
	case isPE(head):
		return "PE"
	}
	return ""
}

// isMachO: the magic numbers of 32- and 64-bit Mach-O, either byte order,
// and of a universal (fat) binary.
func isMachO(magic uint32) bool {
	switch magic {
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe, 0xbebafeca:
		return true
	}
	return false
}

// isPE: an MS-DOS stub ("MZ") whose e_lfanew, at 0x3c, points at the
// "PE\0\0" signature; "MZ" alone opens too many text files.
func isPE(head []byte) bool {
	if len(head) < 0x40 || !bytes.HasPrefix(head, []byte("MZ")) {
		return false
	}
	off := int(binary.LittleEndian.Uint32(head[0x3c:]))
	return off >= 0x40 && off+4 <= len(head) && bytes.Equal(head[off:off+4], []byte("PE\x00\x00"))
}

// inDataFolder: the path lies under a folder named fixtures or testdata.
func inDataFolder(path string) bool {
	parts := strings.Split(path, "/")
	for _, p := range parts[:len(parts)-1] {
		if p == "fixtures" || p == "testdata" {
			return true
		}
	}
	return false
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
