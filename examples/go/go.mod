module tinyshed.org/tinystore-example-chat

go 1.24

require tinyshed.org/tinystore v0.0.0

replace tinyshed.org/tinystore => ../../go
