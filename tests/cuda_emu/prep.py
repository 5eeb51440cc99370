#!/usr/bin/env python3
"""cuda_emu/prep.py SRC.cu: SRC as C++ for the emulator (include/cuda_runtime.h), on stdout.

Two rewrites, each on the lines it finds them on, so that g++'s messages keep SRC's line
numbers (a #line directive names SRC):
  k<<<grid, block[, smem[, stream]]>>>(args)  ->  emu::launch(emu::cfg(grid, block, ...), k, args)
  extern __shared__ __align__(N) unsigned char name[];
      ->  unsigned char *name = emu::dynamic_smem();
Anything else with <<< or extern __shared__ is an error (exit 2), not a silent miss."""
import re
import sys

SMEM = re.compile(r'extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?unsigned\s+char\s+(\w+)\[\];')


def matching(text, i, open_ch, close_ch):
    """index just past the bracket that closes the one at text[i]"""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_ch:
            depth += 1
        elif text[j] == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError(f"no {close_ch} for the {open_ch} at offset {i}")


def kernel_start(text, i):
    """start of the kernel name (an identifier, maybe with template arguments) ending at i"""
    j = i
    while text[j - 1].isspace():  # clang-format may break the line before <<<
        j -= 1
    if text[j - 1] == '>':  # template arguments: walk back to the matching <
        depth = 0
        while True:
            j -= 1
            if text[j] == '>':
                depth += 1
            elif text[j] == '<':
                depth -= 1
                if depth == 0:
                    break
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in '_:'):
        j -= 1
    return j


def rewrite(text):
    out, pos = [], 0
    while True:
        i = text.find('<<<', pos)
        if i < 0:
            break
        k0 = kernel_start(text, i)
        end_cfg = text.index('>>>', i)
        cfg = text[i + 3:end_cfg]
        p = end_cfg + 3
        while text[p].isspace():
            p += 1
        if text[p] != '(':
            raise ValueError(f"no arguments after the launch at offset {i}")
        close = matching(text, p, '(', ')')
        args = text[p + 1:close - 1]
        kernel = text[k0:i].strip()
        args = re.sub(r'\bNULL\b', 'nullptr', args)  # a forwarded NULL is no null pointer
        sep = ', ' if args.strip() else ''
        out.append(text[pos:k0])
        out.append(f'emu::launch(emu::cfg({cfg}), {kernel}{sep}{args})')
        pos = close
    out.append(text[pos:])
    text = ''.join(out)
    text = SMEM.sub(r'unsigned char *\1 = emu::dynamic_smem();', text)
    if 'extern __shared__' in text:
        raise ValueError('an extern __shared__ declaration of another form')
    return text


def main():
    if len(sys.argv) != 2:
        print('usage: prep.py SRC.cu', file=sys.stderr)
        return 2
    src = sys.argv[1]
    try:
        with open(src, encoding='utf-8') as f:
            text = rewrite(f.read())
    except (OSError, ValueError) as e:
        print(f'prep.py: {src}: {e}', file=sys.stderr)
        return 2
    sys.stdout.write(f'#line 1 "{src}"\n{text}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
