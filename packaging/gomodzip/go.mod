module tinyshed.org/tinystore/packaging/gomodzip

go 1.24

require golang.org/x/mod v0.25.0
