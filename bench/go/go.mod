module github.com/mulligan-dev/mulligan/bench/go

go 1.24

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/mulligan-dev/mulligan/bindings/go v0.0.0
)

require github.com/bits-and-blooms/bitset v1.24.4 // indirect

replace github.com/mulligan-dev/mulligan/bindings/go => ../../bindings/go
