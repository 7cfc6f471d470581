package demo

import (
	_ "embed"
)

//go:embed data/model.onnx
var model []byte

//go:embed data/images.npy
var images []byte

//go:embed data/labels.npy
var labels []byte

//go:embed data/logits.npy
var logits []byte

// Model returns the ONNX model bytes (read-only).
func Model() []byte { return model }

// Images returns the .npy file of the test images, float32 [N,1,28,28].
func Images() []byte { return images }

// Labels returns the .npy file of the true labels, int64 [N].
func Labels() []byte { return labels }

// Logits returns the .npy file of PyTorch's logits for the images.
func Logits() []byte { return logits }

// Classes names the ten Fashion-MNIST classes by label.
var Classes = [10]string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}
