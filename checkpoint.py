"""
The run directory train.py writes and serve.py / eval.py read: out_dir/ckpt_<iter>/, each checkpoint complete or
absent (written to a temporary directory, fsynced, renamed into place).

    out_dir/ckpt_<iter>/model.safetensors   weights under openpi's key names (LoRA merged in)
                        ema.safetensors     the EMA weights (ema=True)
                        adapters.safetensors  LoRA adapters alone (lora=True)
                        state.pt            optimizer, config, data position, RNG: what resuming needs
                        policy.json         what serving needs besides the weights: model config, cameras, prompt
                                            format, state/action dims, tokenizer, the simulator the data came from
                        norm_stats.json     the dataset's quantile statistics (openpi's layout)
                        tokenizer.model     the SentencePiece model the prompts were tokenized with
                        manifest.json       every file's size, written last

    save_checkpoint(...)           write one, atomically, and keep the newest keep_last
    checkpoint_problem(ckpt)       why it cannot be used (manifest sizes, unreadable files), or None
    newest_valid_checkpoint(run)   the newest usable one (broken newer ones moved aside when resuming)
    clean_interrupted(run)         what a crash left half-written: removed, or put back
    find(path)                     a checkpoint directory, or the newest good one of a run directory (serve.py
                                   --ckpt, train.py init_from)
    policy_info(...)               what policy.json holds
    read_policy(ckpt)              (policy.json dict, norm stats, tokenizer) for serving
"""
import json
import os
import re
import shutil

import torch

import data
import model as M


def list_checkpoints(out_dir):
    """[(iter, path)] of the complete checkpoints in out_dir, oldest first."""
    found = []
    for name in os.listdir(out_dir) if os.path.isdir(out_dir) else []:
        m = re.fullmatch(r'ckpt_(\d+)', name)
        if m and os.path.exists(os.path.join(out_dir, name, 'state.pt')):
            found.append((int(m.group(1)), os.path.join(out_dir, name)))
    return sorted(found)


def checkpoint_problem(path):
    """Why the checkpoint directory cannot be resumed from, or None. Its manifest.json (written last) gives every
    file's size; the files must be there with those sizes, the safetensors headers must parse and state.pt must
    open. Reads headers only: seconds even for pi05's 40 GB of optimizer state."""
    from safetensors import safe_open
    try:
        with open(os.path.join(path, 'manifest.json')) as f:
            files = json.load(f)['files']
    except FileNotFoundError:
        return 'manifest.json is missing (written last: the checkpoint did not finish)'
    except (ValueError, KeyError, TypeError) as err:
        return f'manifest.json is damaged ({err})'
    for name, size in files.items():
        p = os.path.join(path, name)
        if not os.path.exists(p):
            return f'{name} is missing'
        if os.path.getsize(p) != size:
            return f'{name} is {os.path.getsize(p)} bytes, the manifest says {size} (truncated or overwritten)'
        try:
            if name.endswith('.safetensors'):
                with safe_open(p, framework='pt') as f:
                    f.keys()
            elif name.endswith('.pt'):
                torch.load(p, map_location='cpu', weights_only=True, mmap=True)
        except Exception as err:
            return f'{name} cannot be read ({type(err).__name__}: {str(err).splitlines()[0][:200]})'
    return None


def newest_valid_checkpoint(out_dir, log_fn=print, master=True):
    """The newest checkpoint in out_dir that passes checkpoint_problem. Broken newer ones are reported and renamed
    to ckpt_<iter>.broken (kept for inspection, out of the way of keep_last), so a damaged checkpoint never blocks
    resuming from an older good one."""
    for _, path in reversed(list_checkpoints(out_dir)):
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        log_fn(f'warning: skipping checkpoint {path}: {problem}' + (f'; moved to {path}.broken' if master else ''))
        if master:
            os.replace(path, path + '.broken')
    return None


def policy_info(cfg, meta, conf):
    """What serving a checkpoint needs besides the weights (serve.Policy reads it from policy.json): the model
    config, the cameras in slot order with their wrist flags, the prompt format and bucket, the native state and
    action dims, the tokenizer. The normalization statistics travel as norm_stats.json next to it."""
    from dataclasses import asdict
    tok = meta.get('tokenizer')
    if tok == 'words':
        tokenizer = {'kind': 'words', 'vocab': meta['vocab']}
    else:
        tokenizer = {'kind': 'sentencepiece', 'file': 'tokenizer.model', 'source': tok}
    return dict(format=1, model_name=conf['model_name'], model=asdict(cfg), prompt_format=conf['prompt_format'],
                prompt_bucket=conf['prompt_bucket'], cameras=meta['cameras'], wrist=meta['wrist'],
                state_dim=meta['state_dim'], action_dim=meta['action_dim'], fps=meta.get('fps'),
                sample_steps=conf['sample_steps'], tokenizer=tokenizer, tasks=meta.get('tasks', []), sim=meta.get('sim'))


def save_checkpoint(out_dir, it, raw, ema_model, state, keep_last, policy=None, data_dir=None, weights=None):
    """Write the files into a temporary directory, then manifest.json with their sizes, fsync, then rename the
    directory into place: a crash leaves either the whole checkpoint or none. Then delete all but the newest
    keep_last. policy (policy_info) and data_dir's stats.json and tokenizer make the checkpoint serve on its own."""
    final = os.path.join(out_dir, f'ckpt_{it}')
    tmp = os.path.join(out_dir, f'.tmp_ckpt_{it}')
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    M.save_pretrained(raw, tmp, state_dict=weights)  # model.safetensors in openpi's key format (LoRA merged in)
    if any('.lora_' in n for n, _ in raw.named_parameters()):  # and the adapters alone, to resume or share
        M.save_tensors(M.lora_state_dict(raw), os.path.join(tmp, 'adapters.safetensors'))
    if policy is not None:
        with open(os.path.join(tmp, 'policy.json'), 'w') as f:
            json.dump(policy, f, indent=1)
        shutil.copyfile(os.path.join(data_dir, 'stats.json'), os.path.join(tmp, 'norm_stats.json'))
        source = policy['tokenizer'].get('source')
        if source and os.path.exists(source):
            shutil.copyfile(source, os.path.join(tmp, 'tokenizer.model'))
    if ema_model is not None:
        M.save_pretrained(ema_model, os.path.join(tmp, 'ema.safetensors'))
    with open(os.path.join(tmp, 'state.pt'), 'wb') as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    files = {name: os.path.getsize(os.path.join(tmp, name)) for name in sorted(os.listdir(tmp))}
    with open(os.path.join(tmp, 'manifest.json'), 'w') as f:
        json.dump({'iter': it, 'files': files}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    M.fsync_path(tmp)
    if os.path.exists(final):  # re-saving an iteration: move the old one aside first (rename is atomic)
        os.replace(final, tmp + '.old')
    os.replace(tmp, final)
    M.fsync_path(out_dir)
    shutil.rmtree(tmp + '.old', ignore_errors=True)
    if keep_last:
        for _, old in list_checkpoints(out_dir)[:-keep_last]:
            shutil.rmtree(old)
    return final

def clean_interrupted(out_dir):
    """Remove the temporary directories of checkpoint writes a crash interrupted; where the crash came between
    save_checkpoint's two renames (ckpt_<iter> moved aside, the new one not yet in place), put the old one back if it
    is whole. Returns what was done, one line each."""
    done = []
    if not os.path.isdir(out_dir):  # a run that has not started yet
        return done
    for name in sorted(os.listdir(out_dir)):
        path = os.path.join(out_dir, name)
        if not name.startswith('.tmp_ckpt_'):
            continue
        final = os.path.join(out_dir, name[len('.tmp_'):].removesuffix('.old'))
        if name.endswith('.old') and not os.path.exists(final) and checkpoint_problem(path) is None:
            os.replace(path, final)
            done.append(f'{final}: put back (a crash interrupted its re-save)')
        else:  # the new copy of a re-save too: the old one it replaced is the one whose run went on from it
            shutil.rmtree(path, ignore_errors=True)
            done.append(f'{path}: removed (a checkpoint write a crash interrupted)')
    return done

def find(path, log_fn=print):
    """path itself when it is a checkpoint (holds policy.json), else the newest good checkpoint of the run directory
    path; FileNotFoundError naming what was looked for."""
    if os.path.exists(os.path.join(path, 'policy.json')):
        return path
    if os.path.isdir(path):
        found = newest_valid_checkpoint(path, log_fn, master=False)
        if found is not None:
            return found
    raise FileNotFoundError(f"{path} is neither a checkpoint (a directory with policy.json, written by train.py as "
                            f"out_dir/ckpt_<iter>) nor a run directory holding one")


def tokenizer_of(ckpt_dir, spec):
    """The prompt tokenizer policy.json describes: a word vocabulary, or the tokenizer.model next to it."""
    if spec['kind'] == 'words':
        tok = data.WordTokenizer([])
        tok.vocab, tok.ids = spec['vocab'], {w: i for i, w in enumerate(spec['vocab'])}
        return tok
    path = os.path.join(ckpt_dir, spec['file'])
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: the checkpoint has no tokenizer (train.py copies the one "
                                f"meta.json names, {spec.get('source')}); copy the tokenizer model there")
    return data.load_tokenizer(path)

def read_policy(ckpt_dir):
    """(policy.json as a dict, norm stats, tokenizer) of a checkpoint directory."""
    path = os.path.join(ckpt_dir, 'policy.json')
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: --ckpt takes a checkpoint directory written by train.py "
                                f"(out_dir/ckpt_<iter>) or the run directory out_dir")
    try:
        with open(path) as f:
            info = json.load(f)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err}); copy the checkpoint again") from None
    return info, data.load_stats(os.path.join(ckpt_dir, 'norm_stats.json')), tokenizer_of(ckpt_dir, info['tokenizer'])
