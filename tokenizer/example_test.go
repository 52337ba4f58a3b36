package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/tokenizer"
)

func ExampleFromGGUF() {
	f, err := gguf.Open("../testdata/stories260K.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tk.Encode("Once upon a time", tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)
	for _, id := range ids {
		fmt.Printf("%q ", tk.Piece(id))
	}
	fmt.Println()
	// Output:
	// [1 403 407 261 378]
	// "<s>" " Once" " upon" " a" " time"
}

func ExampleTokenizer_Encode() {
	// A SentencePiece vocabulary built by hand: the merge of "▁" and "hi"
	// scores higher than anything else.
	v := &tokenizer.Vocab{
		Model:  "llama",
		Tokens: []string{"<unk>", "<s>", "</s>", "▁", "h", "i", "hi", "▁hi"},
		Scores: []float32{0, 0, 0, -1, -1, -1, -2, -3},
		Types: []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl,
			tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal},
	}
	tk, err := tokenizer.New(v)
	if err != nil {
		log.Fatal(err)
	}
	ids, _ := tk.Encode("hi hi", tokenizer.EncodeOptions{AddSpecial: true})
	fmt.Println(ids)
	// Like llama_detokenize, Detokenize drops the space Encode prefixed,
	// except after a BOS token.
	text, _ := tk.Detokenize(ids[1:], tokenizer.DetokenizeOptions{})
	fmt.Printf("%q\n", text)
	text, _ = tk.Detokenize(ids, tokenizer.DetokenizeOptions{RemoveSpecial: true})
	fmt.Printf("%q\n", text)
	// Output:
	// [1 7 7]
	// "hi hi"
	// " hi hi"
}

func ExampleStreamDecoder() {
	f, err := gguf.Open("../testdata/stories260K.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		log.Fatal(err)
	}
	// "我" has no token in this vocabulary: it becomes three byte tokens.
	ids, _ := tk.Encode("我", tokenizer.EncodeOptions{})
	d := tk.NewStreamDecoder()
	for _, id := range ids {
		fmt.Printf("%d -> %q\n", id, d.Push(id))
	}
	fmt.Printf("flush -> %q\n", d.Flush())
	// Output:
	// 410 -> " "
	// 233 -> ""
	// 139 -> ""
	// 148 -> "我"
	// flush -> ""
}
