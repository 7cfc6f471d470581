module github.com/berth-ml/berth

go 1.26

require (
	golang.org/x/sys v0.47.0
	google.golang.org/protobuf v1.36.12
)

require github.com/ebitengine/purego v0.11.3
