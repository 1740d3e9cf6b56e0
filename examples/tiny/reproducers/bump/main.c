#include <stdio.h>

#include "tiny.h"

int main(void)
{
    int got = tiny_op_02(0);
    printf("tiny_op_02(0) = %d (want 4)\n", got);
    return got == 4 ? 0 : 1;
}
