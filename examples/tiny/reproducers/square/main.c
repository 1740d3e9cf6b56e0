#include <stdio.h>

/* 0001 adds the definition only; the declaration comes later in the stack. */
int tiny_square(int v);

int main(void)
{
    int got = tiny_square(-7);
    printf("tiny_square(-7) = %d (want 49)\n", got);
    return got == 49 ? 0 : 1;
}
