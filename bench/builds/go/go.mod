module tinyshed.org/tinystore/bench/builds

go 1.24

require tinyshed.org/tinystore v0.0.0

// The tree's own Go package, over its own libtinystore.a: compare.py builds
// this worker once in each tree it compares.
replace tinyshed.org/tinystore => ../../../go
