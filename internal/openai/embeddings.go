package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"choir/internal/jsonlimit"
)

// EmbedRequest is one batch for POST <endpoint>/embeddings.
type EmbedRequest struct {
	Model string
	Input []string
	// Dimensions, when positive, asks for vectors of that size (models that
	// support shortening) and is checked against what comes back. Zero is
	// not sent.
	Dimensions int
}

type wireEmbedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
	// EncodingFormat is always "float": the providers' default, said
	// explicitly because some SDKs default to base64.
	EncodingFormat string `json:"encoding_format"`
}

type wireEmbedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage Usage           `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// Embed returns one vector per input, in input order whatever order the
// provider listed them in (it numbers them by index). Every error is an
// *APIError; an answer with a missing, repeated or differently sized vector
// is KindMalformed. An empty batch makes no call.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) ([][]float32, Usage, error) {
	if len(req.Input) == 0 {
		return nil, Usage{}, nil
	}
	k := c.call("embeddings", req.Model)
	if req.Model == "" {
		return nil, Usage{}, k.fail(KindBadRequest, 0, "not sent: no model named", nil)
	}
	body, err := json.Marshal(wireEmbedRequest{Model: req.Model, Input: req.Input, Dimensions: max(req.Dimensions, 0), EncodingFormat: "float"})
	if err != nil {
		return nil, Usage{}, k.fail(KindBadRequest, 0, "not sent: "+err.Error(), err)
	}
	data, err := c.post(ctx, k, body)
	if err != nil {
		return nil, Usage{}, err
	}
	return decodeEmbeddings(k, data, len(req.Input), req.Dimensions)
}

func decodeEmbeddings(k call, data []byte, n, dims int) ([][]float32, Usage, error) {
	malformed := func(format string, args ...any) error {
		return k.fail(KindMalformed, http.StatusOK, fmt.Sprintf(format, args...), nil)
	}
	if err := jsonlimit.Check(data, jsonlimit.Limits{MaxDepth: jsonlimit.DefaultMaxDepth}); err != nil {
		return nil, Usage{}, k.fail(KindMalformed, http.StatusOK, "answer refused: "+err.Error(), err)
	}
	var w wireEmbedResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, Usage{}, k.fail(KindMalformed, http.StatusOK, fmt.Sprintf("answer is not an embedding list (%v); %s", err, k.excerpt(data)), err)
	}
	if present(w.Error) {
		return nil, Usage{}, errorInBody(k, data)
	}
	if len(w.Data) != n {
		return nil, Usage{}, malformed("asked for %d embeddings, got %d", n, len(w.Data))
	}
	vectors := make([][]float32, n)
	for i, d := range w.Data {
		switch {
		case d.Index < 0 || d.Index >= n:
			return nil, Usage{}, malformed("data[%d].index is %d, outside 0..%d", i, d.Index, n-1)
		case vectors[d.Index] != nil:
			return nil, Usage{}, malformed("data[%d].index %d is repeated", i, d.Index)
		case len(d.Embedding) == 0:
			return nil, Usage{}, malformed("data[%d] (index %d) has an empty embedding", i, d.Index)
		case dims > 0 && len(d.Embedding) != dims:
			return nil, Usage{}, malformed("data[%d] (index %d) has %d dimensions, want %d", i, d.Index, len(d.Embedding), dims)
		case len(d.Embedding) != len(w.Data[0].Embedding):
			return nil, Usage{}, malformed("data[%d] (index %d) has %d dimensions, data[0] has %d", i, d.Index, len(d.Embedding), len(w.Data[0].Embedding))
		}
		vectors[d.Index] = d.Embedding
	}
	return vectors, w.Usage, nil
}
