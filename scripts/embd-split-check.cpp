// What upstream llama.cpp itself computes for two sequences in one batch with the embeddings on
// and off, built against an unpatched tree (no layer range anywhere). With the embeddings on every
// token is an output, and a recurrent or hybrid memory then splits the batch into ubatches by
// sequence; with them off, into ubatches of equal parts of each sequence. The same numbers either
// way, up to rounding, are what a caller expects. The stages before the last of a chain split the
// batch the second way, as the full model does for logits, also when the last stage pools; there
// PLaMo 2's pooled embeddings came out far from the full model's.
//
//   embd-split-check MODEL   decodes two sequences of 5 and 4 tokens in one batch, ubatches of 5,
//                            in a context with the embeddings off and in one with them on; the
//                            logits of the 9 tokens bit for bit. Exit 1 if they differ.
#include "llama.h"
#include "upstream-check.h"

#include <cstdio>
#include <cstring>
#include <vector>

// the logits of every token of the batch, from a context with the embeddings on or off
static std::vector<float> batch_logits(llama_model * model, bool embeddings) {
    llama_context * ctx = new_context(model);
    llama_set_embeddings(ctx, embeddings);
    std::vector<float> logits = two_sequence_logits(ctx);
    llama_free(ctx);
    return logits;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL\n", argv[0]);
        return 2;
    }
    llama_model * model = load_model(argv[1]);
    const std::vector<float> off = batch_logits(model, false);
    const std::vector<float> on  = batch_logits(model, true);
    double diff = 0.0;
    double norm = 0.0;
    for (size_t i = 0; i < off.size(); i++) {
        diff += (double) (on[i] - off[i])*(on[i] - off[i]);
        norm += (double) off[i]*off[i];
    }
    const bool same = memcmp(on.data(), off.data(), on.size()*sizeof(float)) == 0;
    printf("the logits of 9 tokens with the embeddings on %s those with them off (nmse %g)\n", same ? "equal" : "DIFFER from", diff/norm);
    llama_model_free(model);
    return same ? 0 : 1;
}
