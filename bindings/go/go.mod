module github.com/mulligan-dev/mulligan/bindings/go

go 1.19
