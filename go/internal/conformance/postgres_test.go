package conformance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tinyshed.org/tinystore/internal/cases"
)

// notCarried is tests/conformance/not_on_postgres.json, which every runner
// reads: the case files that need what a PostgreSQL store does not carry
// yet, why, and the text of the refusal.
type notCarried struct {
	Refusal string            `json:"refusal"`
	Files   map[string]string `json:"files"`
}

func loadNotCarried(t *testing.T, root string) notCarried {
	data, err := os.ReadFile(filepath.Join(root, "tests", "conformance", "not_on_postgres.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n notCarried
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatalf("not_on_postgres.json: %v", err)
	}
	return n
}

// postgresServer is the server CI starts (make pg-start; make exports its
// location). Without one the run fails, saying how to start one.
func postgresServer(t *testing.T) string {
	server := os.Getenv("TINYSTORE_TEST_PG")
	if server == "" {
		t.Fatal("the PostgreSQL run needs a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then " +
			"`export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run it through make")
	}
	return server
}

// emptySchema drops schema, so that a case starts on an empty store, and
// gives the location of a store in it.
func emptySchema(t *testing.T, server, schema string) string {
	out, err := exec.Command("psql", server, "-v", "ON_ERROR_STOP=1", "-qc",
		"DROP SCHEMA IF EXISTS "+schema+" CASCADE").CombinedOutput()
	if err != nil {
		t.Fatalf("psql: dropping %s: %v: %s", schema, err, out)
	}
	sep := "?"
	if strings.Contains(server, "?") {
		sep = "&"
	}
	return server + sep + "schema=" + schema
}

// TestConformanceCasesKV01ToKV19OnPostgres runs every case again on a store
// in a PostgreSQL schema of its own. A case of a file that
// not_on_postgres.json lists may fail only with the refusal it names.
func TestConformanceCasesKV01ToKV19OnPostgres(t *testing.T) {
	root, err := cases.Root()
	if err != nil {
		t.Fatal(err)
	}
	server := postgresServer(t)
	not := loadNotCarried(t, root)
	all := loadCases(t, root)
	files := map[string]bool{}
	for _, c := range all {
		files[c.File] = true
	}
	for f := range not.Files {
		if !files[f] {
			t.Errorf("not_on_postgres.json names %s, which is no case file", f)
		}
	}
	passed, refused := 0, map[string]int{}
	for i, c := range all {
		t.Run(c.ID+" "+c.Title, func(t *testing.T) {
			location := emptySchema(t, server, fmt.Sprintf("conformance_go_%d", i))
			err := runCaseAt(location, c)
			if err == nil {
				passed++
				return
			}
			if _, listed := not.Files[c.File]; listed && strings.Contains(err.Error(), not.Refusal) {
				refused[c.File]++
				return
			}
			t.Fatalf("%s %q on PostgreSQL, %v", c.ID, c.Title, err)
		})
	}
	n := 0
	for _, k := range refused {
		n += k
	}
	t.Logf("conformance go on PostgreSQL: %d of %d cases passed, %d refused as %s", passed, len(all), n, not.Refusal)
	for f, why := range not.Files {
		t.Logf("  %s: %s (%d cases refused)", f, why, refused[f])
	}
}
