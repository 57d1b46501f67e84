"""train.py with one more model shape, 'small_p8': the 'small' model with 8 px patches (256 tokens per 128 px camera
instead of 64), to see whether a finer grid lets MT10's policy place the gripper on the puck.
    python docs/closed_loop/m_train_p8.py config/metaworld.py --model_name=small_p8 ... (train.py's arguments; from
    the repository root)"""
import dataclasses
import os
import runpy
import sys

if __name__ == '__main__':
    sys.path.insert(0, os.getcwd())
    import model
    model.configs['small_p8'] = dataclasses.replace(model.configs['small'], patch=8)
    sys.argv = ['train.py'] + sys.argv[1:]
    runpy.run_path('train.py', run_name='__main__')
