// Command gomodzip writes one version of a Go module as a module proxy
// serves it (https://go.dev/ref/mod#goproxy-protocol), so that
// GOPROXY=file://DIR finds it:
//
//	DIR/MODULE/@v/list          the versions, one a line
//	DIR/MODULE/@v/VERSION.info  {"Version", "Time"}
//	DIR/MODULE/@v/VERSION.mod   the module's go.mod
//	DIR/MODULE/@v/VERSION.zip   the module, zipped by golang.org/x/mod/zip,
//	                            which checks every rule the go command does
//
// Usage: gomodzip -dir SRC -out DIR -version vX.Y.Z [-time RFC3339]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	src := flag.String("dir", "", "the module's directory (holding go.mod)")
	out := flag.String("out", "", "the proxy directory to write into")
	version := flag.String("version", "", "the version, such as v0.1.0")
	stamp := flag.String("time", "", "the version's time (RFC 3339; default now)")
	flag.Parse()
	if err := run(*src, *out, *version, *stamp); err != nil {
		fmt.Fprintln(os.Stderr, "gomodzip:", err)
		os.Exit(1)
	}
}

func run(src, out, version, stamp string) error {
	if src == "" || out == "" || version == "" {
		return fmt.Errorf("-dir, -out and -version are required")
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("-version %q is not a canonical semantic version such as v0.1.0", version)
	}
	when := time.Now().UTC()
	if stamp != "" {
		t, err := time.Parse(time.RFC3339, stamp)
		if err != nil {
			return fmt.Errorf("-time %q: %w", stamp, err)
		}
		when = t.UTC()
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return fmt.Errorf("%s/go.mod names no module", src)
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mv, src); err != nil {
		f.Close()
		return fmt.Errorf("zipping %s: %w", src, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644)
}
