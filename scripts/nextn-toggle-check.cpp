// What upstream llama.cpp itself does when the hidden states for MTP are turned on in a context
// that has already decoded (llama_set_embeddings_nextn(), staged in llama-ext.h), built against an
// unpatched tree (no layer range anywhere). The boundary-io test of the stack turns them on in the
// contexts its chains ran in, and the full model's rows came out wrong for one prompt length.
//
//   nextn-toggle-check MODEL   for prompts of 1 to 8 tokens: a context decodes two sequences of
//                              4 tokens and two steps, its memory is cleared, the hidden states
//                              (unmasked) are turned on and the prompt decoded; its rows bit for
//                              bit against a new context's, which had them on before its first
//                              batch. Then the same with the graph planned again after the switch
//                              (llama_set_embeddings_layer_inp() asks for that). Exit 1 if rows
//                              differ without the new plan, 3 if they differ with it too.
#include "llama.h"
#include "llama-ext.h"
#include "upstream-check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// the hidden states for MTP of a prompt of n tokens, turned on in ctx just before it
static std::vector<float> prompt_rows(llama_model * model, llama_context * ctx, int n, bool plan_again) {
    llama_set_embeddings_nextn(ctx, true, false);
    if (plan_again) {
        llama_set_embeddings_layer_inp(ctx, 0, false);
    }
    std::vector<llama_seq_id> seq(n, 0);
    std::vector<llama_pos> pos;
    for (int i = 0; i < n; i++) {
        pos.push_back(i);
    }
    if (!decode(ctx, seq, pos)) {
        fprintf(stderr, "the prompt does not decode\n");
        exit(2);
    }
    const int n_h = llama_model_n_embd_out(model);
    std::vector<float> rows;
    for (int i = 0; i < n; i++) {
        const float * h = llama_get_embeddings_nextn_ith(ctx, i);
        rows.insert(rows.end(), h, h + n_h);
    }
    return rows;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL\n", argv[0]);
        return 2;
    }
    llama_model * model = load_model(argv[1]);
    if (llama_model_n_layer_nextn(model) == 0) {
        fprintf(stderr, "%s has no MTP layers\n", argv[1]);
        return 2;
    }
    int rc = 0;
    for (const bool plan_again : { false, true }) {
        for (int n = 1; n <= 8; n++) {
            llama_context * fresh = new_context(model);
            const std::vector<float> expected = prompt_rows(model, fresh, n, false);
            llama_free(fresh);

            llama_context * ctx = new_context(model);
            if (!decode(ctx, { 0, 0, 0, 0, 1, 1, 1, 1 }, { 0, 1, 2, 3, 0, 1, 2, 3 }) || !decode(ctx, { 0, 1 }, { 4, 4 }) || !decode(ctx, { 0, 1 }, { 5, 5 })) {
                fprintf(stderr, "the batches before do not decode\n");
                exit(2);
            }
            llama_memory_clear(llama_get_memory(ctx), true);
            const std::vector<float> got = prompt_rows(model, ctx, n, plan_again);
            llama_free(ctx);

            const bool same = memcmp(got.data(), expected.data(), got.size()*sizeof(float)) == 0;
            printf("%s, prompt of %d tokens: the rows %s a new context's (row 0 starts %g, there %g)\n",
                plan_again ? "planned again" : "switched on", n, same ? "equal" : "DIFFER from", got[0], expected[0]);
            if (!same) {
                rc = plan_again ? 3 : 1; // the runs with the new plan come last
            }
        }
    }
    llama_model_free(model);
    return rc;
}
