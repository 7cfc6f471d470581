module github.com/berth-ml/berth

go 1.26.0

require (
	golang.org/x/sys v0.50.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
