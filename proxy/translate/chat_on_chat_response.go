package translate

import "fmt"

// ChatResponseModel rewrites the model of a non-stream Chat response to the
// alias, leaving every other byte as the backend sent it. A response
// without a model gets one.
func ChatResponseModel(chatBody []byte, alias string) ([]byte, error) {
	top, err := scanObject(chatBody, false, func(name []byte) bool { return string(name) == "model" })
	if err != nil {
		return nil, fmt.Errorf("translate: backend response is not a JSON object: %w", err)
	}
	return withModel(chatBody, &top, alias), nil
}
