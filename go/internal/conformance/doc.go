// Package conformance is the Go runner of the language-neutral conformance
// cases (tests/conformance/README.md): `go test ./internal/conformance`
// drives the public Go API through every case of
// tests/conformance/cases/*.json, fails on any operation it does not know,
// and writes how many cases ran per contract id to
// target/conformance/go.txt for tests/conformance/report.py.
//
// Where the Go API's shape differs from a case's, the runner maps it:
//   - a list "limit" of 0 is ListOptions.Limit -1, since Limit 0 is Go's
//     default page of 100;
//   - quota "refund" answers with a Peek right after Refund, which in Go
//     answers only an error;
//   - a case's durations and rates are read with tinystore.ParseDuration
//     and tinystore.ParseRate, so a bad one is the open's ErrInvalid.
package conformance
