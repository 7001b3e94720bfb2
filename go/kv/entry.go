package kv

import (
	"strconv"
	"time"

	"tinyshed.org/tinystore/internal/native"
)

// Version is the revision of the file that wrote a value. A version never
// repeats, across delete, expiry and reopen. It compares only for equality
// (==) and marshals to text; the zero Version is no version.
type Version struct{ rev int64 }

// String is the version as decimal text.
func (v Version) String() string { return strconv.FormatInt(v.rev, 10) }

// IsZero says whether v is no version.
func (v Version) IsZero() bool { return v.rev == 0 }

// MarshalText writes the version as decimal text.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a version MarshalText wrote.
func (v *Version) UnmarshalText(b []byte) error {
	n, err := native.ParseVersion(string(b))
	if err != nil {
		return err
	}
	v.rev = n
	return nil
}

// Entry is a key with its value, version and expiry.
type Entry[T any] struct {
	// Key is the key's text, without its owners.
	Key string
	// Value is the value.
	Value T
	// Version is the revision that wrote the value.
	Version Version
	// ExpiresAt is when the key expires on the store's clock; the zero
	// time if it does not.
	ExpiresAt time.Time
}

// ListOptions say where a page of List starts and how many keys it holds.
type ListOptions struct {
	// After starts the page after this key: the Next of the page before.
	After string
	// Limit is the most keys of the page, 1 to 1000; 0 means 100.
	Limit int
}

// Page is one page of List.
type Page[T any] struct {
	// Entries are the page's keys, in the byte order of their text.
	Entries []Entry[T]
	// Next is the After of the next page; "" when this is the last page.
	Next string
}

// RawKind is the kind of row a Raw value is kept in.
type RawKind int

// The three kinds of row.
const (
	// RawNull is no value: a member of a set.
	RawNull RawKind = iota
	// RawInt is an integer row: integers and bools.
	RawInt
	// RawBytes is a byte row: strings, bytes, float bits, uint64 and JSON.
	RawBytes
)

// Raw is a value as its row keeps it: nothing, an integer or bytes. A
// bucket of Raw reads what a bucket of any type, in any language, wrote
// under its name, and writes what such a bucket reads: a program without
// the types reads and writes every bucket.
type Raw struct {
	// Kind says which of Int and Bytes holds the value.
	Kind RawKind
	// Int is an integer row's value.
	Int int64
	// Bytes is a byte row's value; an empty string is empty bytes.
	Bytes []byte
}

func entryOf[T any](e native.Entry, v T) Entry[T] {
	out := Entry[T]{Key: e.Key, Value: v, Version: Version{e.Version}}
	if e.HasExpiry {
		out.ExpiresAt = time.UnixMilli(e.ExpiresMs)
	}
	return out
}
