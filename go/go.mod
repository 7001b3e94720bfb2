module tinyshed.org/tinystore

go 1.24
