#include <stdio.h>

#include "tiny.h"

int main(void)
{
    int got = tiny_square(-7);
    printf("tiny_square(-7) = %d (want 49)\n", got);
    return got == 49 ? 0 : 1;
}
