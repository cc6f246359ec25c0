from __future__ import annotations

from django.urls import path

from . import case_views, views

app_name = "eval_app"
urlpatterns = [
    path("", views.eval_set_list, name="eval_set_list"),
    path("sets/<int:pk>/", views.eval_set_detail, name="eval_set_detail"),
    path("sets/<int:pk>/delete/", views.eval_set_delete, name="eval_set_delete"),
    path("sets/<int:pk>/export/<str:fmt>/", views.eval_set_export, name="eval_set_export"),
    path("sets/<int:pk>/runs/", views.eval_run_create, name="run_create"),
    path("cases/<int:pk>/edit/", case_views.case_edit, name="case_edit"),
    path("cases/<int:pk>/delete/", case_views.case_delete, name="case_delete"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("runs/<int:pk>/stop/", views.run_stop, name="run_stop"),
    path("runs/<int:pk>/resume/", views.run_resume, name="run_resume"),
    path("results/<int:pk>/", views.result_detail, name="result_detail"),
    path("compare/", views.run_compare, name="run_compare"),
    path("sessions/<int:session_pk>/add/", case_views.add_session_form, name="add_session_form"),
]
